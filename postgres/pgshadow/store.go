// Package pgshadow is the shadow layer's PostgreSQL parts: the Store of
// its records (the shops' modes, comparison counters and disagreement
// samples, migration 004) and the migration demo (Demo), which runs the
// layer over a Redis legacy store and the PostgreSQL engine.
package pgshadow

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/shadow"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = sqltext.Load("pgshadow", sqlFiles, "sql")

// NewStore returns the shadow layer's store in pool's database (migrated
// to 004). Safe for concurrent use.
func NewStore(pool *pgxpool.Pool) shadow.Store { return store{pool: pool} }

type store struct{ pool *pgxpool.Pool }

func (s store) Enroll(ctx context.Context, shops []int64) error {
	_, err := s.pool.Exec(ctx, statements.Get("enroll"), shops)
	return err
}

func (s store) ChangeMode(ctx context.Context, shop int64, decide func(from shadow.Mode, since *time.Time, now time.Time) (*shadow.ModeChange, error)) (bool, error) {
	found := true
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var from shadow.Mode
		var since *time.Time
		var now time.Time
		err := tx.QueryRow(ctx, statements.Get("mode_lock"), shop).Scan(&from, &since, &now)
		if errors.Is(err, pgx.ErrNoRows) {
			found = false
			return nil
		}
		if err != nil {
			return err
		}
		c, err := decide(from, since, now)
		if err != nil || c == nil {
			return err
		}
		_, err = tx.Exec(ctx, statements.Get("mode_set"), shop, string(c.To), c.EnteringShadow, c.Reason, c.Now, string(c.From))
		return err
	})
	return found, err
}

func (s store) ModesRevision(ctx context.Context) (int64, error) {
	var rev int64
	err := s.pool.QueryRow(ctx, statements.Get("revision")).Scan(&rev)
	return rev, err
}

func (s store) Modes(ctx context.Context) ([]shadow.ShopMode, int64, error) {
	rows, err := s.pool.Query(ctx, statements.Get("modes"))
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []shadow.ShopMode
	var rev int64
	for rows.Next() {
		var m shadow.ShopMode
		var since *time.Time
		if err := rows.Scan(&m.ShopID, &m.Mode, &since, &m.ChangedAt, &rev); err != nil {
			return nil, 0, err
		}
		if since != nil {
			m.ShadowSince = *since
		}
		out = append(out, m)
	}
	return out, rev, rows.Err()
}

func (s store) AddComparisons(ctx context.Context, counts []shadow.Counts, samples []shadow.Sample, samplesMax int) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		for _, c := range counts {
			batch.Queue(statements.Get("stats_add"), c.ShopID, c.Op, c.Kind, c.N, c.Legacy, c.Holdfast)
		}
		shops := map[int64]bool{}
		for _, sm := range samples {
			batch.Queue(statements.Get("sample_add"), sm.ShopID, sm.Op, sm.Kind, string(sm.Request), string(sm.Legacy), string(sm.Holdfast))
			shops[sm.ShopID] = true
		}
		for shop := range shops {
			batch.Queue(statements.Get("sample_trim"), shop, samplesMax)
		}
		return tx.SendBatch(ctx, batch).Close()
	})
}

func (s store) Counts(ctx context.Context) ([]shadow.Counts, error) {
	rows, err := s.pool.Query(ctx, statements.Get("stats_read"))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []shadow.Counts
	for rows.Next() {
		var c shadow.Counts
		if err := rows.Scan(&c.ShopID, &c.Op, &c.Kind, &c.N, &c.Legacy, &c.Holdfast); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (s store) Samples(ctx context.Context, shop int64, limit int) ([]shadow.Sample, error) {
	rows, err := s.pool.Query(ctx, statements.Get("samples_read"), shop, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []shadow.Sample
	for rows.Next() {
		var sm shadow.Sample
		var req, l, h []byte
		if err := rows.Scan(&sm.ID, &sm.ShopID, &sm.Op, &sm.Kind, &req, &l, &h, &sm.RecordedAt); err != nil {
			return nil, err
		}
		sm.Request, sm.Legacy, sm.Holdfast = json.RawMessage(req), json.RawMessage(l), json.RawMessage(h)
		out = append(out, sm)
	}
	return out, rows.Err()
}

func (s store) StockedKeys(ctx context.Context, shop int64, n int) ([]holdfast.Key, error) {
	rows, err := s.pool.Query(ctx, statements.Get("keys_read"), shop, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []holdfast.Key
	for rows.Next() {
		k := holdfast.Key{ShopID: shop}
		if err := rows.Scan(&k.ItemID, &k.LocationID); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}
