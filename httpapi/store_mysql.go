package httpapi

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
)

//go:embed sql/mysql/*.sql
var mysqlFiles embed.FS

// mysqlStmt returns an embedded MySQL statement with its sqlcommenter
// comment.
func mysqlStmt(route, name string) string { return mysqlStatements.Tagged(route, name) }

var mysqlStatements = sqltext.Load("httpapi", mysqlFiles, "sql/mysql")

var (
	myKeyInsert      = mysqlStmt("keys", "key_insert")
	myKeyCreated     = mysqlStmt("keys", "key_created")
	myKeyLookup      = mysqlStmt("auth", "key_lookup")
	myKeyTouch       = mysqlStmt("auth", "key_touch")
	myKeyFind        = mysqlStmt("keys", "key_find")
	myKeyRevoke      = mysqlStmt("keys", "key_revoke")
	myKeyLive        = mysqlStmt("keys", "key_live")
	myKeyExpire      = mysqlStmt("keys", "key_expire")
	myKeyList        = mysqlStmt("keys", "key_list")
	myAdminLive      = mysqlStmt("console", "console_admin_live")
	myConsoleShops   = mysqlStmt("console", "console_shops")
	myConsoleHead    = mysqlStmt("console", "console_events_head")
	mySchemaVersions = mysqlStmt("readyz", "schema_versions")
)

// MySQLStore is the service's Store in a MySQL/MariaDB database migrated
// by package mysql/migrations (its api_keys table, migration 008). db must
// be configured as the MySQL engine's (mysql.Configure: times parsed as
// UTC).
func MySQLStore(db *sql.DB) Store { return myStore{db: db} }

// defaultStore is the Store cfg implies: PostgreSQL on Pool, else the pool
// of a MySQL engine; nil when neither.
func defaultStore(cfg Config) Store {
	if cfg.Pool != nil {
		return PostgresStore(cfg.Pool)
	}
	if mc, ok := cfg.Engine.(*mysql.Client); ok {
		return MySQLStore(mc.DB())
	}
	return nil
}

type myStore struct{ db *sql.DB }

type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inTx runs fn in a transaction, committed when fn returns nil. Its
// isolation is explicit, READ COMMITTED like the engine's (mysql.TxOptions):
// the server's default, REPEATABLE READ, would take next-key locks on a
// rotation's locking read and block key inserts meanwhile.
func (s myStore) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s myStore) insertKey(ctx context.Context, hash []byte, rec *APIKey) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return myInsertKey(ctx, tx, hash, rec) })
}

func myInsertKey(ctx context.Context, q execQuerier, hash []byte, rec *APIKey) error {
	var shop, exp any
	if !rec.Admin {
		shop = rec.ShopID
	}
	if rec.ExpiresAt != nil {
		exp = rec.ExpiresAt.UTC()
	}
	res, err := q.ExecContext(ctx, myKeyInsert, hash, shop, rec.Admin, rec.Name, strings.Join(scopeStrings(rec.Scopes), ","), exp)
	if err != nil {
		return err
	}
	if rec.ID, err = res.LastInsertId(); err != nil {
		return err
	}
	return q.QueryRowContext(ctx, myKeyCreated, rec.ID).Scan(&rec.CreatedAt)
}

// parseScopes reads a stored comma list of scopes.
func parseScopes(s string) []Scope {
	var out []Scope
	for _, f := range strings.Split(s, ",") {
		if f != "" {
			out = append(out, Scope(f))
		}
	}
	return out
}

func (s myStore) lookupKey(ctx context.Context, hash []byte) (storedKey, bool, error) {
	var k storedKey
	var shop, leftUS sql.NullInt64
	var scopes string
	err := s.db.QueryRowContext(ctx, myKeyLookup, hash).Scan(&k.id, &k.hash, &shop, &k.admin, &scopes, &leftUS, &k.revoked, &k.expired)
	if errors.Is(err, sql.ErrNoRows) {
		return storedKey{}, false, nil
	}
	if err != nil {
		return storedKey{}, false, err
	}
	k.shop = shop.Int64
	k.scopes = parseScopes(scopes)
	if leftUS.Valid {
		d := time.Duration(leftUS.Int64) * time.Microsecond
		k.left = &d
	}
	return k, true, nil
}

func (s myStore) touchKey(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, myKeyTouch, id)
	return err
}

func (s myStore) revokeKey(ctx context.Context, id int64, hash []byte) (int64, error) {
	var got int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, myKeyFind, id, hash).Scan(&got)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrKeyNotFound
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, myKeyRevoke, got)
		return err
	})
	return got, err
}

func (s myStore) rotateKey(ctx context.Context, id int64, hash, newHash []byte, grace time.Duration) (*APIKey, error) {
	var rec *APIKey
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		r := &APIKey{}
		var oldID int64
		var shop sql.NullInt64
		var scopes string
		err := tx.QueryRowContext(ctx, myKeyLive, id, hash).Scan(&oldID, &shop, &r.Admin, &r.Name, &scopes)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrKeyNotFound
		}
		if err != nil {
			return err
		}
		r.ShopID, r.Scopes = shop.Int64, parseScopes(scopes)
		if err := myInsertKey(ctx, tx, newHash, r); err != nil {
			return err
		}
		rec = r
		us := grace.Microseconds()
		_, err = tx.ExecContext(ctx, myKeyExpire, us, us, oldID)
		return err
	})
	return rec, err
}

func (s myStore) listKeys(ctx context.Context, limit int) ([]APIKey, error) {
	rows, err := s.db.QueryContext(ctx, myKeyList, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []APIKey
	for rows.Next() {
		var k APIKey
		var shop sql.NullInt64
		var scopes string
		var exp, used, revoked sql.NullTime
		if err := rows.Scan(&k.ID, &shop, &k.Admin, &k.Name, &scopes, &k.CreatedAt, &exp, &used, &revoked); err != nil {
			return nil, err
		}
		k.ShopID, k.Scopes = shop.Int64, parseScopes(scopes)
		k.ExpiresAt, k.LastUsedAt, k.RevokedAt = nullTime(exp), nullTime(used), nullTime(revoked)
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

func nullTime(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

func (s myStore) adminLive(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := s.db.QueryRowContext(ctx, myAdminLive, id).Scan(&ok)
	return ok, err
}

func (s myStore) shops(ctx context.Context, n int) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, myConsoleShops, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// eventsHead is a shop's newest event cursor, for the console: the MySQL
// engine's events live beside the keys.
func (s myStore) eventsHead(ctx context.Context, shop int64) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, myConsoleHead, shop).Scan(&n)
	return n, err
}

// ready: the schema is current when every embedded migration is recorded
// and none newer is.
func (s myStore) ready(ctx context.Context) (int, error) {
	all, err := migrations.All()
	if err != nil {
		return 0, err
	}
	rows, err := s.db.QueryContext(ctx, mySchemaVersions)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var have []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return 0, err
		}
		have = append(have, v)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	latest := all[len(all)-1].Version
	for _, v := range have {
		if v > latest {
			return 0, asSchemaError(fmt.Errorf("the MySQL schema is at version %d, newer than this binary's %d", v, latest))
		}
	}
	for _, m := range all {
		if !slices.Contains(have, m.Version) {
			return 0, asSchemaError(fmt.Errorf("the MySQL schema lacks migration %03d_%s; run holdfast serve --engine mariadb (it migrates on start)", m.Version, m.Name))
		}
	}
	return latest, nil
}
