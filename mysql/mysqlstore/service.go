package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/metrics"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/webhook"
)

var (
	myKeyInsert      = serviceStmt("keys", "key_insert")
	myKeyCreated     = serviceStmt("keys", "key_created")
	myKeyLookup      = serviceStmt("auth", "key_lookup")
	myKeyTouch       = serviceStmt("auth", "key_touch")
	myKeyFind        = serviceStmt("keys", "key_find")
	myKeyRevoke      = serviceStmt("keys", "key_revoke")
	myKeyLive        = serviceStmt("keys", "key_live")
	myKeyExpire      = serviceStmt("keys", "key_expire")
	myKeyList        = serviceStmt("keys", "key_list")
	myAuditInsert    = serviceStmt("keys", "audit_insert")
	myAdminLive      = serviceStmt("console", "console_admin_live")
	myConsoleShops   = serviceStmt("console", "console_shops")
	myConsoleHead    = serviceStmt("console", "console_events_head")
	mySchemaVersions = serviceStmt("readyz", "schema_versions")
)

// Service returns the HTTP service's store (httpapi.Store) in a
// MySQL/MariaDB database migrated by package mysql/migrations: its
// api_keys table (migration 008), the webhook registry (Webhooks), the
// console's reads and readiness. db must be configured as the MySQL
// engine's (mysql.Configure: times parsed as UTC). It is also a
// prometheus.Collector of db's statistics (pool="api"). Safe for
// concurrent use.
func Service(db *sql.DB) *ServiceStore {
	return &ServiceStore{db: db, Collector: metrics.NewSQLPoolCollector(db, "api")}
}

// ServiceStore is Service's store.
type ServiceStore struct {
	db *sql.DB
	prometheus.Collector
}

var _ httpapi.Store = (*ServiceStore)(nil)

// Webhooks is the webhook registry's store in the same database.
func (s *ServiceStore) Webhooks() webhook.Store { return Webhooks(s.db) }

// Unreachable reports MySQL connection errors (mysql.Unreachable).
func (s *ServiceStore) Unreachable(err error) bool { return mysql.Unreachable(err) }

type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// inTx runs fn in a transaction, committed when fn returns nil. Its
// isolation is explicit, READ COMMITTED like the engine's (mysql.TxOptions):
// the server's default, REPEATABLE READ, would take next-key locks on a
// rotation's locking read and block key inserts meanwhile.
func (s *ServiceStore) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
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

func (s *ServiceStore) InsertKey(ctx context.Context, hash []byte, rec *httpapi.APIKey) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := myInsertKey(ctx, tx, hash, rec); err != nil {
			return err
		}
		return myAudit(ctx, tx, httpapi.KeyAudit(ctx, holdfast.AuditKeyCreate, httpapi.KeyShop(rec), rec, 0, 0))
	})
}

// myAudit writes an API key change's audit entry in its transaction.
func myAudit(ctx context.Context, tx *sql.Tx, r holdfast.AuditRecord) error {
	var key any
	if r.Actor.KeyID != 0 {
		key = r.Actor.KeyID
	}
	_, err := tx.ExecContext(ctx, myAuditInsert, r.ShopID, r.Action, key, r.Actor.Name(), r.Actor.Remote, r.Actor.RequestID, string(r.Detail))
	return err
}

func myInsertKey(ctx context.Context, q execQuerier, hash []byte, rec *httpapi.APIKey) error {
	var shop, exp any
	if !rec.Admin {
		shop = rec.ShopID
	}
	if rec.ExpiresAt != nil {
		exp = rec.ExpiresAt.UTC()
	}
	res, err := q.ExecContext(ctx, myKeyInsert, hash, shop, rec.Admin, rec.Name, strings.Join(httpapi.ScopeStrings(rec.Scopes), ","), exp)
	if err != nil {
		return err
	}
	if rec.ID, err = res.LastInsertId(); err != nil {
		return err
	}
	return q.QueryRowContext(ctx, myKeyCreated, rec.ID).Scan(&rec.CreatedAt)
}

// parseScopes reads a stored comma list of scopes.
func parseScopes(s string) []httpapi.Scope {
	var out []httpapi.Scope
	for _, f := range strings.Split(s, ",") {
		if f != "" {
			out = append(out, httpapi.Scope(f))
		}
	}
	return out
}

func (s *ServiceStore) LookupKey(ctx context.Context, hash []byte) (httpapi.StoredKey, bool, error) {
	var k httpapi.StoredKey
	var shop, leftUS sql.NullInt64
	var scopes string
	err := s.db.QueryRowContext(ctx, myKeyLookup, hash).Scan(&k.ID, &k.Hash, &k.Name, &shop, &k.Admin, &scopes, &leftUS, &k.Revoked, &k.Expired)
	if errors.Is(err, sql.ErrNoRows) {
		return httpapi.StoredKey{}, false, nil
	}
	if err != nil {
		return httpapi.StoredKey{}, false, err
	}
	k.Shop = shop.Int64
	k.Scopes = parseScopes(scopes)
	if leftUS.Valid {
		d := time.Duration(leftUS.Int64) * time.Microsecond
		k.Left = &d
	}
	return k, true, nil
}

func (s *ServiceStore) TouchKey(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, myKeyTouch, id)
	return err
}

func (s *ServiceStore) RevokeKey(ctx context.Context, id int64, hash []byte) (int64, error) {
	var got, shop int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, myKeyFind, id, hash).Scan(&got, &shop)
		if errors.Is(err, sql.ErrNoRows) {
			return httpapi.ErrKeyNotFound
		}
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, myKeyRevoke, got); err != nil {
			return err
		}
		return myAudit(ctx, tx, httpapi.KeyAudit(ctx, holdfast.AuditKeyRevoke, shop, nil, got, 0))
	})
	return got, err
}

func (s *ServiceStore) RotateKey(ctx context.Context, id int64, hash, newHash []byte, grace time.Duration) (*httpapi.APIKey, error) {
	var rec *httpapi.APIKey
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		r := &httpapi.APIKey{}
		var oldID int64
		var shop sql.NullInt64
		var scopes string
		err := tx.QueryRowContext(ctx, myKeyLive, id, hash).Scan(&oldID, &shop, &r.Admin, &r.Name, &scopes)
		if errors.Is(err, sql.ErrNoRows) {
			return httpapi.ErrKeyNotFound
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
		if _, err = tx.ExecContext(ctx, myKeyExpire, us, us, oldID); err != nil {
			return err
		}
		return myAudit(ctx, tx, httpapi.KeyAudit(ctx, holdfast.AuditKeyRotate, httpapi.KeyShop(r), r, oldID, grace))
	})
	return rec, err
}

func (s *ServiceStore) ListKeys(ctx context.Context, limit int) ([]httpapi.APIKey, error) {
	rows, err := s.db.QueryContext(ctx, myKeyList, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []httpapi.APIKey
	for rows.Next() {
		var k httpapi.APIKey
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

func (s *ServiceStore) AdminLive(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := s.db.QueryRowContext(ctx, myAdminLive, id).Scan(&ok)
	return ok, err
}

func (s *ServiceStore) Shops(ctx context.Context, n int) ([]int64, error) {
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
func (s *ServiceStore) EventsHead(ctx context.Context, shop int64) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, myConsoleHead, shop).Scan(&n)
	return n, err
}

// ready: the schema is current when every embedded migration is recorded
// and none newer is.
func (s *ServiceStore) Ready(ctx context.Context) (int, error) {
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
			return 0, httpapi.SchemaError(fmt.Errorf("the MySQL schema is at version %d, newer than this binary's %d", v, latest))
		}
	}
	for _, m := range all {
		if !slices.Contains(have, m.Version) {
			return 0, httpapi.SchemaError(fmt.Errorf("the MySQL schema lacks migration %03d_%s; run holdfast serve --engine mysql (it migrates on start)", m.Version, m.Name))
		}
	}
	return latest, nil
}
