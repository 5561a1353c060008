package mysql

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// A checkout's in-flight mark (issue #10 item 4, docs/FAULTS.md finding 7):
// a retry of a checkout whose first attempt is still uncommitted must not be
// told sold out when that attempt then commits the hold. A reservation takes
// units before it inserts its hold (the lock order, doc.go; an optimistic
// combined batch inserts first, but answers nothing before COMMIT), so until its
// commit nothing of it is visible to a retry's lock-free reads, and MySQL has
// no transaction-scoped advisory lock (PostgreSQL's answer). Every plain
// reservation attempt therefore first inserts its checkout's row into
// reserve_inflight and deletes it again: no row is ever committed, but the
// delete-marked record keeps the attempt's exclusive lock until COMMIT or
// ROLLBACK. A retry's own mark waits on it (retries of one checkout run one
// after another, and the later one finds the hold, or reserves by itself),
// and the sold-out hint probes it with NOWAIT: held, the hint goes the
// normal way. Nothing else touches the table, so the mark is first in the
// lock order without closing a cycle. Cost: two writes per attempt.
//
// The marks are not guarded by triggers (migration 22 dropped
// reserve_inflight's placement-guard triggers, which a combined hold paid
// twice): a mark never outlives its transaction, so a move has none to
// copy or fence. A combined batch answers only the holds it writes, whose
// rows are guarded; a plain attempt, which may answer without writing a
// guarded row (sold out, a replay, a wait), makes the guard's checks in
// its unmark statement, under the mark's lock as the trigger did, and is
// refused with the guard's SQLSTATE HF001 (errShopFenced) when the shop is
// fenced.

// errInFlight is the sold-out hint's answer when another attempt of the
// checkout holds its in-flight mark: go the normal way.
var errInFlight = errors.New("holdfast/mysql: another attempt of the checkout is in flight")

// markInFlight writes and deletes the checkout's in-flight mark in tx, the
// attempt's first write; it waits for another attempt of the checkout.
func (c *Client) markInFlight(ctx context.Context, tx *sql.Tx, shop int64, checkout uuid.UUID) error {
	const route = holdfast.RouteReserve
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "inflight_mark"), shop, checkout[:]); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "inflight_unmark"), shop, checkout[:])
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		// The mark this transaction just inserted was kept: the shop is
		// fenced (inflight_unmark.sql). The transaction is rolled back
		// with it.
		return errShopFenced
	}
	return nil
}

// errShopFenced is a plain attempt's refusal for a shop fenced on this pod,
// found by its unmark: the placement guard's own answer (SQLSTATE HF001,
// the server's number for a SIGNAL), so every layer that reads the
// guard's refusal (shopMoved, the engine's ErrShopMoved) reads it alike.
var errShopFenced error = &mysqldriver.MySQLError{
	Number:   erSignalException,
	SQLState: [5]byte{'H', 'F', '0', '0', '1'},
	Message:  "holdfast: the shop is fenced on this pod (moving, arriving or moved away)",
}

// inFlight reports whether another attempt of the checkout holds its mark,
// without waiting (autocommit). An error other than a lock wait is returned.
func (c *Client) inFlight(ctx context.Context, shop int64, checkout uuid.UUID) (bool, error) {
	const route = holdfast.RouteReserve
	var one int
	err := c.db.QueryRowContext(ctx, c.q(ctx, route, "inflight_probe"), shop, checkout[:]).Scan(&one)
	switch {
	case err == nil, errors.Is(err, sql.ErrNoRows):
		return false, nil // a committed mark cannot exist; absent or purged
	case isLockBusy(err):
		return true, nil
	}
	return false, err
}

// isLockBusy reports a NOWAIT read that found the row locked.
func isLockBusy(err error) bool {
	n := errNumber(err)
	return n == erLockNowait || n == erLockWaitTimeout
}

// markInFlightBatch writes and deletes the in-flight marks of a combined
// batch's checkouts (distinct), in checkout order, as its first write.
func (c *Client) markInFlightBatch(ctx context.Context, tx *sql.Tx, reqs []*reservation) error {
	const route = holdfast.RouteReserve
	sorted := slices.Clone(reqs)
	slices.SortFunc(sorted, func(a, b *reservation) int {
		return cmp.Or(cmp.Compare(a.Shop, b.Shop), bytes.Compare(a.Checkout[:], b.Checkout[:]))
	})
	raw := appendBatchIDs(nil, sorted)
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "inflight_mark_batch"), raw); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, c.q(ctx, route, "inflight_unmark_batch"), raw)
	return err
}
