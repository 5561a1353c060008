package webhook

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// store is where the registry and the deliverer keep endpoints and dead
// letters: PostgreSQL (migration 008 of package migrate) or MySQL/MariaDB
// (migration 009 of package mysql/migrations), each in its own SQL.
type store interface {
	// insertEndpoint registers an endpoint starting after cursor after
	// (nil: past every event of the shop committed before it, the feed's
	// head plus the events not yet sequenced); ErrTooMany past max per
	// shop.
	insertEndpoint(ctx context.Context, shop int64, url, secret string, after *int64, max int) (*Endpoint, error)
	listEndpoints(ctx context.Context, shop int64) ([]Endpoint, error)
	// deleteEndpoint removes one with its dead letters and answers it as
	// it was, its dead letters counted; ErrNotFound.
	deleteEndpoint(ctx context.Context, shop, id int64) (*Endpoint, error)
	deadLetters(ctx context.Context, shop int64, limit int) ([]DeadLetter, error)
	// lease leases up to n due endpoints for leaseFor.
	lease(ctx context.Context, leaseFor time.Duration, n int) ([]leased, error)
	unlease(ctx context.Context, id int64) error
	// delivered moves an endpoint past cursor and clears its failure.
	delivered(ctx context.Context, id, cursor int64) error
	// failed records a failed attempt, waits wait before the next, and
	// reports whether horizon has passed since the event's first failure.
	failed(ctx context.Context, id int64, attempts int, msg string, wait, horizon time.Duration) (past bool, err error)
	// deadLetter keeps the event as a dead letter and moves past it.
	deadLetter(ctx context.Context, id, shop, cursor int64, event []byte, attempts int, msg string) error
}

// pgStore is the store in PostgreSQL.
type pgStore struct{ pool *pgxpool.Pool }

func (s pgStore) insertEndpoint(ctx context.Context, shop int64, url, secret string, after *int64, max int) (*Endpoint, error) {
	var ep *Endpoint
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, stmt("endpoint_lock"), shop); err != nil {
			return err
		}
		var err error
		ep, err = scanEndpoint(tx.QueryRow(ctx, stmt("endpoint_insert"), shop, url, secret, after, max), false)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrTooMany
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return ep, nil
}

func (s pgStore) listEndpoints(ctx context.Context, shop int64) ([]Endpoint, error) {
	rows, err := s.pool.Query(ctx, stmt("endpoint_list"), shop)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Endpoint{}
	for rows.Next() {
		ep, err := scanEndpoint(rows, true)
		if err != nil {
			return nil, err
		}
		out = append(out, *ep)
	}
	return out, rows.Err()
}

func (s pgStore) deleteEndpoint(ctx context.Context, shop, id int64) (*Endpoint, error) {
	var ep *Endpoint
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var locked int64
		if err := tx.QueryRow(ctx, stmt("endpoint_lock_row"), shop, id).Scan(&locked); err != nil {
			return err
		}
		var err error
		ep, err = scanEndpoint(tx.QueryRow(ctx, stmt("endpoint_delete"), shop, id), true)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return ep, nil
}

func (s pgStore) deadLetters(ctx context.Context, shop int64, limit int) ([]DeadLetter, error) {
	rows, err := s.pool.Query(ctx, stmt("dead_letters"), shop, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []DeadLetter{}
	for rows.Next() {
		var d DeadLetter
		if err := rows.Scan(&d.ID, &d.EndpointID, &d.ShopID, &d.Cursor, &d.Event, &d.Attempts, &d.LastError, &d.DeadAt); err != nil {
			return nil, err
		}
		d.DeadAt = d.DeadAt.UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

func (s pgStore) lease(ctx context.Context, leaseFor time.Duration, n int) ([]leased, error) {
	rows, err := s.pool.Query(ctx, stmt("lease"), leaseFor.Microseconds(), n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []leased
	for rows.Next() {
		var l leased
		if err := rows.Scan(&l.id, &l.shop, &l.url, &l.secret, &l.cursor, &l.attempts, &l.firstFailed); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

func (s pgStore) unlease(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, stmt("unlease"), id)
	return err
}

func (s pgStore) delivered(ctx context.Context, id, cursor int64) error {
	_, err := s.pool.Exec(ctx, stmt("delivered"), id, cursor)
	return err
}

func (s pgStore) failed(ctx context.Context, id int64, attempts int, msg string, wait, horizon time.Duration) (bool, error) {
	var past bool
	err := s.pool.QueryRow(ctx, stmt("failed"), id, attempts, msg, wait.Microseconds(), horizon.Microseconds()).Scan(&past)
	return past, err
}

func (s pgStore) deadLetter(ctx context.Context, id, shop, cursor int64, event []byte, attempts int, msg string) error {
	_, err := s.pool.Exec(ctx, stmt("dead_letter"), id, shop, cursor, event, attempts, msg)
	return err
}
