package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/webhook"
)

var (
	sqlKeyLookup        = serviceStmt("auth", "key_lookup")
	sqlKeyTouch         = serviceStmt("auth", "key_touch")
	sqlKeyInsert        = serviceStmt("keys", "key_insert")
	sqlKeyRevoke        = serviceStmt("keys", "key_revoke")
	sqlKeyList          = serviceStmt("keys", "key_list")
	sqlKeyLive          = serviceStmt("keys", "key_live")
	sqlKeyExpire        = serviceStmt("keys", "key_expire")
	sqlAuditInsert      = serviceStmt("keys", "audit_insert")
	sqlConsoleAdminLive = serviceStmt("console", "console_admin_live")
	sqlConsoleShops     = serviceStmt("console", "console_shops")
	sqlConsoleHead      = serviceStmt("console", "console_events_head")
)

// Service returns the HTTP service's store (httpapi.Store) in a PostgreSQL
// database migrated by package postgres/migrations: its api_keys table,
// the webhook registry (Webhooks), the console's reads and readiness. It is
// also a prometheus.Collector of pool's statistics (pool="api") and runs
// the doctor for the console (pgops.Doctor). Safe for concurrent use.
func Service(pool *pgxpool.Pool) *ServiceStore {
	return &ServiceStore{pool: pool, Collector: pgops.NewPoolCollector(pool, "api")}
}

// ServiceStore is Service's store.
type ServiceStore struct {
	pool *pgxpool.Pool
	prometheus.Collector
}

var _ httpapi.Store = (*ServiceStore)(nil)

// Webhooks is the webhook registry's store in the same database.
func (s *ServiceStore) Webhooks() webhook.Store { return Webhooks(s.pool) }

// Unreachable reports PostgreSQL connection errors (postgres.Unreachable).
func (s *ServiceStore) Unreachable(err error) bool { return postgres.Unreachable(err) }

// Doctor runs the PostgreSQL doctor's checks, for the console.
func (s *ServiceStore) Doctor(ctx context.Context) (*health.Report, error) {
	return pgops.Doctor(ctx, s.pool, pgops.DoctorConfig{})
}

// EventsHead is a shop's newest event cursor, for the console.
func (s *ServiceStore) EventsHead(ctx context.Context, shop int64) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, sqlConsoleHead, shop).Scan(&n)
	return n, err
}

func (s *ServiceStore) InsertKey(ctx context.Context, hash []byte, rec *httpapi.APIKey) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := pgInsertKey(ctx, tx, hash, rec); err != nil {
			return err
		}
		return pgAudit(ctx, tx, httpapi.KeyAudit(ctx, holdfast.AuditKeyCreate, httpapi.KeyShop(rec), rec, 0, 0))
	})
}

// pgAudit writes an API key change's audit entry in its transaction.
func pgAudit(ctx context.Context, tx pgx.Tx, r holdfast.AuditRecord) error {
	var key *int64
	if r.Actor.KeyID != 0 {
		key = &r.Actor.KeyID
	}
	_, err := tx.Exec(ctx, sqlAuditInsert, r.ShopID, r.Action, key, r.Actor.Name(), r.Actor.Remote, r.Actor.RequestID, string(r.Detail))
	return err
}

func pgInsertKey(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, hash []byte, rec *httpapi.APIKey) error {
	var shop *int64
	if !rec.Admin {
		shop = &rec.ShopID
	}
	return q.QueryRow(ctx, sqlKeyInsert, hash, shop, rec.Admin, rec.Name, httpapi.ScopeStrings(rec.Scopes), rec.ExpiresAt).Scan(&rec.ID, &rec.CreatedAt)
}

func (s *ServiceStore) LookupKey(ctx context.Context, hash []byte) (httpapi.StoredKey, bool, error) {
	var k httpapi.StoredKey
	var shop *int64
	var scopes []string
	var left *float64
	err := s.pool.QueryRow(ctx, sqlKeyLookup, hash).Scan(&k.ID, &k.Hash, &k.Name, &shop, &k.Admin, &scopes, &left, &k.Revoked, &k.Expired)
	if errors.Is(err, pgx.ErrNoRows) {
		return httpapi.StoredKey{}, false, nil
	}
	if err != nil {
		return httpapi.StoredKey{}, false, err
	}
	if shop != nil {
		k.Shop = *shop
	}
	for _, sc := range scopes {
		k.Scopes = append(k.Scopes, httpapi.Scope(sc))
	}
	if left != nil {
		d := time.Duration(*left * float64(time.Second))
		k.Left = &d
	}
	return k, true, nil
}

func (s *ServiceStore) TouchKey(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, sqlKeyTouch, id)
	return err
}

func (s *ServiceStore) RevokeKey(ctx context.Context, id int64, hash []byte) (int64, error) {
	var got, shop int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, sqlKeyRevoke, id, hash).Scan(&got, &shop)
		if errors.Is(err, pgx.ErrNoRows) {
			return httpapi.ErrKeyNotFound
		}
		if err != nil {
			return err
		}
		return pgAudit(ctx, tx, httpapi.KeyAudit(ctx, holdfast.AuditKeyRevoke, shop, nil, got, 0))
	})
	if err != nil {
		return 0, err
	}
	return got, nil
}

func (s *ServiceStore) RotateKey(ctx context.Context, id int64, hash, newHash []byte, grace time.Duration) (*httpapi.APIKey, error) {
	var rec *httpapi.APIKey
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r := &httpapi.APIKey{}
		var oldID int64
		var shop *int64
		var scopes []string
		err := tx.QueryRow(ctx, sqlKeyLive, id, hash).Scan(&oldID, &shop, &r.Admin, &r.Name, &scopes)
		if errors.Is(err, pgx.ErrNoRows) {
			return httpapi.ErrKeyNotFound
		}
		if err != nil {
			return err
		}
		if shop != nil {
			r.ShopID = *shop
		}
		for _, sc := range scopes {
			r.Scopes = append(r.Scopes, httpapi.Scope(sc))
		}
		if err := pgInsertKey(ctx, tx, newHash, r); err != nil {
			return err
		}
		rec = r
		var exp time.Time
		if err := tx.QueryRow(ctx, sqlKeyExpire, oldID, grace.Seconds()).Scan(&exp); err != nil {
			return err
		}
		return pgAudit(ctx, tx, httpapi.KeyAudit(ctx, holdfast.AuditKeyRotate, httpapi.KeyShop(r), r, oldID, grace))
	})
	return rec, err
}

func (s *ServiceStore) ListKeys(ctx context.Context, limit int) ([]httpapi.APIKey, error) {
	rows, err := s.pool.Query(ctx, sqlKeyList, limit)
	if err != nil {
		return nil, err
	}
	var keys []httpapi.APIKey
	for rows.Next() {
		var k httpapi.APIKey
		var shop *int64
		var scopes []string
		if err := rows.Scan(&k.ID, &shop, &k.Admin, &k.Name, &scopes, &k.CreatedAt, &k.ExpiresAt, &k.LastUsedAt, &k.RevokedAt); err != nil {
			rows.Close()
			return nil, err
		}
		if shop != nil {
			k.ShopID = *shop
		}
		for _, sc := range scopes {
			k.Scopes = append(k.Scopes, httpapi.Scope(sc))
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

func (s *ServiceStore) AdminLive(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, sqlConsoleAdminLive, id).Scan(&ok)
	return ok, err
}

func (s *ServiceStore) Shops(ctx context.Context, n int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, sqlConsoleShops, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

func (s *ServiceStore) Ready(ctx context.Context) (int, error) {
	if err := postgres.IsPrimary(ctx, s.pool); err != nil { // a standby alone is not ready (#27)
		return 0, err
	}
	err := migrations.Check(ctx, s.pool)
	if errors.Is(err, migrations.ErrSchemaBehind) || errors.Is(err, migrations.ErrSchemaAhead) {
		return 0, httpapi.SchemaError(err)
	}
	if err != nil {
		return 0, fmt.Errorf("schema check: %w", err)
	}
	return migrations.Latest(), nil
}
