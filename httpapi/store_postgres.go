package httpapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrate"
)

// PostgresStore is the service's Store in a PostgreSQL database migrated
// by package migrate (its api_keys table).
func PostgresStore(pool *pgxpool.Pool) Store { return pgStore{pool: pool} }

type pgStore struct{ pool *pgxpool.Pool }

func (s pgStore) insertKey(ctx context.Context, hash []byte, rec *APIKey) error {
	return pgInsertKey(ctx, s.pool, hash, rec)
}

func pgInsertKey(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, hash []byte, rec *APIKey) error {
	var shop *int64
	if !rec.Admin {
		shop = &rec.ShopID
	}
	return q.QueryRow(ctx, sqlKeyInsert, hash, shop, rec.Admin, rec.Name, scopeStrings(rec.Scopes), rec.ExpiresAt).Scan(&rec.ID, &rec.CreatedAt)
}

func (s pgStore) lookupKey(ctx context.Context, hash []byte) (storedKey, bool, error) {
	var k storedKey
	var shop *int64
	var scopes []string
	var left *float64
	err := s.pool.QueryRow(ctx, sqlKeyLookup, hash).Scan(&k.id, &k.hash, &shop, &k.admin, &scopes, &left, &k.revoked, &k.expired)
	if errors.Is(err, pgx.ErrNoRows) {
		return storedKey{}, false, nil
	}
	if err != nil {
		return storedKey{}, false, err
	}
	if shop != nil {
		k.shop = *shop
	}
	for _, sc := range scopes {
		k.scopes = append(k.scopes, Scope(sc))
	}
	if left != nil {
		d := time.Duration(*left * float64(time.Second))
		k.left = &d
	}
	return k, true, nil
}

func (s pgStore) touchKey(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, sqlKeyTouch, id)
	return err
}

func (s pgStore) revokeKey(ctx context.Context, id int64, hash []byte) (int64, error) {
	var got int64
	err := s.pool.QueryRow(ctx, sqlKeyRevoke, id, hash).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrKeyNotFound
	}
	return got, err
}

func (s pgStore) rotateKey(ctx context.Context, id int64, hash, newHash []byte, grace time.Duration) (*APIKey, error) {
	var rec *APIKey
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r := &APIKey{}
		var oldID int64
		var shop *int64
		var scopes []string
		err := tx.QueryRow(ctx, sqlKeyLive, id, hash).Scan(&oldID, &shop, &r.Admin, &r.Name, &scopes)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrKeyNotFound
		}
		if err != nil {
			return err
		}
		if shop != nil {
			r.ShopID = *shop
		}
		for _, sc := range scopes {
			r.Scopes = append(r.Scopes, Scope(sc))
		}
		if err := pgInsertKey(ctx, tx, newHash, r); err != nil {
			return err
		}
		rec = r
		var exp time.Time
		return tx.QueryRow(ctx, sqlKeyExpire, oldID, grace.Seconds()).Scan(&exp)
	})
	return rec, err
}

func (s pgStore) listKeys(ctx context.Context, limit int) ([]APIKey, error) {
	rows, err := s.pool.Query(ctx, sqlKeyList, limit)
	if err != nil {
		return nil, err
	}
	var keys []APIKey
	for rows.Next() {
		var k APIKey
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
			k.Scopes = append(k.Scopes, Scope(sc))
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

func (s pgStore) adminLive(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, sqlConsoleAdminLive, id).Scan(&ok)
	return ok, err
}

func (s pgStore) shops(ctx context.Context, n int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, sqlConsoleShops, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

func (s pgStore) ready(ctx context.Context) (int, error) {
	if err := postgres.IsPrimary(ctx, s.pool); err != nil { // a standby alone is not ready (#27)
		return 0, err
	}
	err := migrate.Check(ctx, s.pool)
	if errors.Is(err, migrate.ErrSchemaBehind) || errors.Is(err, migrate.ErrSchemaAhead) {
		return 0, asSchemaError(err)
	}
	if err != nil {
		return 0, fmt.Errorf("schema check: %w", err)
	}
	return migrate.Latest(), nil
}
