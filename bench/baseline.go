package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
)

// Bounds of the baselines.
const (
	// baselineRetryMax bounds how often a baseline re-runs a reservation
	// after a deadlock, serialization failure or (optimistic) lost version
	// race.
	baselineRetryMax = 16
	// baselineLockTimeout and baselineStatementTimeout are set in the
	// baselines' own transactions, so a stuck lock fails fast instead of piling up waiters.
	baselineLockTimeout      = "2s"
	baselineStatementTimeout = "3s"
)

// errConflictsExhausted is the optimistic baseline giving up after
// baselineRetryMax lost version races.
var errConflictsExhausted = errors.New("bench: optimistic: version conflicts exhausted the retries")

// errVersionConflict asks runBaseline to roll back and retry.
var errVersionConflict = errors.New("bench: version conflict")

// beginner starts a transaction: a pool, or a caller's transaction (a
// savepoint inside it).
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// runBaseline runs fn in a transaction (own) or a savepoint of the caller's,
// retrying deadlocks, serialization failures and version conflicts with
// jittered backoff, at most baselineRetryMax times.
func runBaseline(ctx context.Context, b beginner, own bool, c *counters, fn func(tx pgx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := func() error {
			tx, err := b.Begin(ctx)
			if err != nil {
				return err
			}
			if own {
				if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+baselineLockTimeout+"'; SET LOCAL statement_timeout = '"+baselineStatementTimeout+"'"); err != nil {
					_ = tx.Rollback(context.WithoutCancel(ctx))
					return err
				}
			}
			if err := fn(tx); err != nil {
				_ = tx.Rollback(context.WithoutCancel(ctx))
				return err
			}
			return tx.Commit(ctx)
		}()
		if err == nil {
			return nil
		}
		state := postgres.SQLState(err)
		switch {
		case errors.Is(err, errVersionConflict):
			state = "version_conflict"
		case state == "40P01" || state == "40001":
		default:
			return err
		}
		if attempt >= baselineRetryMax {
			if errors.Is(err, errVersionConflict) {
				return errConflictsExhausted
			}
			return err
		}
		c.Retry("reserve", state)
		backoff := time.Duration(1<<min(attempt, 6)) * 100 * time.Microsecond
		t := time.NewTimer(backoff/2 + rand.N(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// sortedLines returns the lines in (item, location) order: the lock order
// both baselines follow (one lock order: no deadlock between two carts).
func sortedLines(lines []holdfast.Line) []holdfast.Line {
	s := slices.Clone(lines)
	slices.SortFunc(s, func(a, b holdfast.Line) int {
		if a.ItemID != b.ItemID {
			return cmpInt(a.ItemID, b.ItemID)
		}
		return cmpInt(a.LocationID, b.LocationID)
	})
	return s
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func keyColumns(keys []holdfast.Key) (shop int64, items, locs []int64, err error) {
	for i, k := range keys {
		if i > 0 && k.ShopID != shop {
			return 0, nil, nil, fmt.Errorf("bench: keys span several shops")
		}
		shop = k.ShopID
		items = append(items, k.ItemID)
		locs = append(locs, k.LocationID)
	}
	return shop, items, locs, nil
}

func auditQuery(ctx context.Context, pool *pgxpool.Pool, sql string) (audit, error) {
	var a audit
	var bad int64
	if err := pool.QueryRow(ctx, sql).Scan(&a.held, &a.oversold, &bad); err != nil {
		return a, err
	}
	if bad > 0 {
		a.problem = fmt.Sprintf("%d keys whose hold records do not add up to their reserved count", bad)
	}
	return a, nil
}

// pessimistic is the single-row pessimistic pattern: per line, in key order, lock
// the item row FOR UPDATE, check stock - reserved_stock in the application,
// append a ledger entry, update reserved_stock.
type pessimistic struct {
	pool     *pgxpool.Pool
	counters *counters
}

func (s *pessimistic) setup(ctx context.Context, keys []holdfast.Key, units int) error {
	if _, err := s.pool.Exec(ctx, query("pessimistic_schema")); err != nil {
		return err
	}
	shop, items, locs, err := keyColumns(keys)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, query("pessimistic_stock"), shop, items, locs, units)
	return err
}

func (s *pessimistic) reserve(ctx context.Context, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	return runBaseline(ctx, s.pool, true, s.counters, func(tx pgx.Tx) error { return s.once(ctx, tx, shop, checkout, lines) })
}

func (s *pessimistic) reserveTx(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	return runBaseline(ctx, tx, false, s.counters, func(tx pgx.Tx) error { return s.once(ctx, tx, shop, checkout, lines) })
}

var (
	seedLock   = query("pessimistic_lock")
	seedLedger = query("pessimistic_ledger")
	seedUpdate = query("pessimistic_update")
)

func (s *pessimistic) once(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	for _, l := range sortedLines(lines) {
		var stock, reserved int
		if err := tx.QueryRow(ctx, seedLock, shop, l.ItemID, l.LocationID).Scan(&stock, &reserved); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return errSoldOut
			}
			return err
		}
		if stock-reserved < l.Quantity {
			return errSoldOut
		}
		if _, err := tx.Exec(ctx, seedLedger, shop, l.ItemID, l.LocationID, l.Quantity, checkout); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, seedUpdate, shop, l.ItemID, l.LocationID, l.Quantity); err != nil {
			return err
		}
	}
	return nil
}

func (s *pessimistic) audit(ctx context.Context) (audit, error) {
	return auditQuery(ctx, s.pool, query("pessimistic_audit"))
}

func (s *pessimistic) tables() []string {
	return []string{"bench_pessimistic_items", "bench_pessimistic_ledger"}
}

func (s *pessimistic) start(context.Context)      {}
func (s *pessimistic) stop(context.Context) error { return nil }

// optimistic reads each line's key with its version, without locks, checks
// stock in the application, records the hold line and applies the
// reservation with UPDATE … WHERE version = $v. A key changed since it was
// read rolls the whole reservation back and retries it, at most
// baselineRetryMax times.
type optimistic struct {
	pool     *pgxpool.Pool
	counters *counters
}

func (o *optimistic) setup(ctx context.Context, keys []holdfast.Key, units int) error {
	if _, err := o.pool.Exec(ctx, query("optimistic_schema")); err != nil {
		return err
	}
	shop, items, locs, err := keyColumns(keys)
	if err != nil {
		return err
	}
	_, err = o.pool.Exec(ctx, query("optimistic_stock"), shop, items, locs, units)
	return err
}

func (o *optimistic) reserve(ctx context.Context, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	return runBaseline(ctx, o.pool, true, o.counters, func(tx pgx.Tx) error { return o.once(ctx, tx, shop, checkout, lines) })
}

func (o *optimistic) reserveTx(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	return runBaseline(ctx, tx, false, o.counters, func(tx pgx.Tx) error { return o.once(ctx, tx, shop, checkout, lines) })
}

var (
	optRead   = query("optimistic_read")
	optHold   = query("optimistic_hold")
	optUpdate = query("optimistic_update")
)

func (o *optimistic) once(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	for _, l := range sortedLines(lines) {
		var stock, reserved int
		var version int64
		if err := tx.QueryRow(ctx, optRead, shop, l.ItemID, l.LocationID).Scan(&stock, &reserved, &version); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return errSoldOut
			}
			return err
		}
		if stock-reserved < l.Quantity {
			return errSoldOut
		}
		if _, err := tx.Exec(ctx, optHold, checkout, shop, l.ItemID, l.LocationID, l.Quantity); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, optUpdate, shop, l.ItemID, l.LocationID, l.Quantity, version)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errVersionConflict
		}
	}
	return nil
}

func (o *optimistic) audit(ctx context.Context) (audit, error) {
	return auditQuery(ctx, o.pool, query("optimistic_audit"))
}

func (o *optimistic) tables() []string { return []string{"bench_opt_items", "bench_opt_holds"} }

func (o *optimistic) start(context.Context)      {}
func (o *optimistic) stop(context.Context) error { return nil }
