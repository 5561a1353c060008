package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/webhook"
)

// Webhooks returns the webhook registry's store in pool's database
// (migrated to 008): endpoints and dead letters. Safe for concurrent use.
func Webhooks(pool *pgxpool.Pool) webhook.Store { return webhooks{pool: pool} }

type webhooks struct{ pool *pgxpool.Pool }

func (s webhooks) InsertEndpoint(ctx context.Context, shop int64, url, secret string, after *int64, max int) (*webhook.Endpoint, error) {
	var ep *webhook.Endpoint
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, webhookStmt("endpoint_lock"), shop); err != nil {
			return err
		}
		var err error
		ep, err = scanEndpoint(tx.QueryRow(ctx, webhookStmt("endpoint_insert"), shop, url, secret, after, max), false)
		if errors.Is(err, pgx.ErrNoRows) {
			return webhook.ErrTooMany
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return ep, nil
}

func (s webhooks) ListEndpoints(ctx context.Context, shop int64) ([]webhook.Endpoint, error) {
	rows, err := s.pool.Query(ctx, webhookStmt("endpoint_list"), shop)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []webhook.Endpoint{}
	for rows.Next() {
		ep, err := scanEndpoint(rows, true)
		if err != nil {
			return nil, err
		}
		out = append(out, *ep)
	}
	return out, rows.Err()
}

func (s webhooks) DeleteEndpoint(ctx context.Context, shop, id int64) (*webhook.Endpoint, error) {
	var ep *webhook.Endpoint
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var locked int64
		if err := tx.QueryRow(ctx, webhookStmt("endpoint_lock_row"), shop, id).Scan(&locked); err != nil {
			return err
		}
		var err error
		ep, err = scanEndpoint(tx.QueryRow(ctx, webhookStmt("endpoint_delete"), shop, id), true)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, webhook.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return ep, nil
}

func (s webhooks) DeadLetters(ctx context.Context, shop int64, limit int) ([]webhook.DeadLetter, error) {
	rows, err := s.pool.Query(ctx, webhookStmt("dead_letters"), shop, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []webhook.DeadLetter{}
	for rows.Next() {
		var d webhook.DeadLetter
		if err := rows.Scan(&d.ID, &d.EndpointID, &d.ShopID, &d.Cursor, &d.Event, &d.Attempts, &d.LastError, &d.DeadAt); err != nil {
			return nil, err
		}
		d.DeadAt = d.DeadAt.UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

func (s webhooks) Lease(ctx context.Context, leaseFor time.Duration, n int) ([]webhook.Leased, error) {
	rows, err := s.pool.Query(ctx, webhookStmt("lease"), leaseFor.Microseconds(), n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []webhook.Leased
	for rows.Next() {
		var l webhook.Leased
		if err := rows.Scan(&l.ID, &l.Shop, &l.URL, &l.Secret, &l.Cursor, &l.Attempts, &l.FirstFailed, &l.Token); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// Unlease, Delivered, Failed and DeadLetter are fenced by the lease
// token: no row changed means a later lease has the endpoint.
func (s webhooks) Unlease(ctx context.Context, shop, id, token int64) error {
	tag, err := s.pool.Exec(ctx, webhookStmt("unlease"), id, shop, token)
	return leaseHeld(tag.RowsAffected(), err)
}

func (s webhooks) Delivered(ctx context.Context, shop, id, token, cursor int64) error {
	tag, err := s.pool.Exec(ctx, webhookStmt("delivered"), id, cursor, shop, token)
	return leaseHeld(tag.RowsAffected(), err)
}

func (s webhooks) Failed(ctx context.Context, shop, id, token int64, attempts int, msg string, wait, horizon time.Duration) (bool, error) {
	var past bool
	err := s.pool.QueryRow(ctx, webhookStmt("failed"), id, attempts, msg, wait.Microseconds(), horizon.Microseconds(), shop, token).Scan(&past)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, webhook.ErrLeaseLost
	}
	return past, err
}

func (s webhooks) DeadLetter(ctx context.Context, id, shop, token, cursor int64, event []byte, attempts int, msg string) error {
	var n int64
	err := s.pool.QueryRow(ctx, webhookStmt("dead_letter"), id, shop, cursor, event, attempts, msg, token).Scan(&n)
	return leaseHeld(n, err)
}

// leaseHeld answers a fenced write: ErrLeaseLost when it changed no row.
func leaseHeld(rows int64, err error) error {
	if err == nil && rows == 0 {
		return webhook.ErrLeaseLost
	}
	return err
}

func scanEndpoint(row pgx.Row, withDead bool) (*webhook.Endpoint, error) {
	var ep webhook.Endpoint
	var lastErr *string
	dst := []any{&ep.ID, &ep.ShopID, &ep.URL, &ep.Cursor, &ep.Attempts, &ep.NextAt, &lastErr, &ep.CreatedAt}
	if withDead {
		dst = append(dst, &ep.DeadLetters)
	}
	if err := row.Scan(dst...); err != nil {
		return nil, err
	}
	if lastErr != nil {
		ep.LastError = *lastErr
	}
	ep.Normalize()
	return &ep, nil
}
