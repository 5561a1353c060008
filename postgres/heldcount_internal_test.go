package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// linesRead is how many scans of reserved_quantities the transaction has
// started so far (pg_stat_xact_user_tables counts this transaction's own).
func linesRead(t *testing.T, ctx context.Context, tx pgx.Tx) int64 {
	t.Helper()
	var n int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0)
FROM pg_stat_xact_user_tables WHERE relname = 'reserved_quantities'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHeldChecksReadNoLines (issue #15 item 4): the refill, the sold-out
// checks (sellable, the hint's sold_out), a key's state, the waitlist's
// per-key read and the sold-out events read a key's held units without
// reading its hold lines — their cost does not grow with the key's holds —
// and still answer the held units exactly.
func TestHeldChecksReadNoLines(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 4)
	c, err := New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 20, "test", ""); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}}); err != nil {
			t.Fatal(err)
		}
	}
	const held = 10
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", keyHash(k)); err != nil {
		t.Fatal(err)
	}
	before := linesRead(t, ctx, tx)
	res, err := c.refill(ctx, tx, holdfast.RouteReplenish, []holdfast.Key{k})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].held != held {
		t.Fatalf("refill saw %+v, want held %d", res, held)
	}
	items, locs := []int64{1}, []int64{1}
	var avail, h int
	var waiters, exists bool
	if err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReserve, "sellable"), int64(1), items, locs).Scan(&avail, &h, &waiters); err != nil || h != held {
		t.Fatalf("sellable: held %d, err %v; want %d", h, err, held)
	}
	if err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReserve, "sold_out"), int64(1), uuid.New(), items, locs).Scan(&exists, &avail, &h); err != nil || h != held {
		t.Fatalf("sold_out: held %d, err %v; want %d", h, err, held)
	}
	if err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReserve, "waitlist_keys"), int64(1), items, locs).Scan(&avail, &h, &waiters); err != nil || h != held {
		t.Fatalf("waitlist_keys: held %d, err %v; want %d", h, err, held)
	}
	// A key's state as production reads it (keyState, every column of
	// key_state.sql), not a copy of its scan that can fall behind the
	// statement.
	st, err := c.keyState(ctx, tx, holdfast.RouteRead, k)
	if err != nil || st.held != held {
		t.Fatalf("key_state: held %d, err %v; want %d", st.held, err, held)
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteSweep, "events_keys"), []int64{1}, items, locs); err != nil {
		t.Fatal(err)
	}
	if n := linesRead(t, ctx, tx) - before; n != 0 {
		t.Errorf("held checks started %d scans of reserved_quantities, want 0", n)
	}
	// The probe sees a read of the lines when there is one.
	if _, err := tx.Exec(ctx, "SELECT sum(quantity) FROM reserved_quantities WHERE shop_id = 1 AND inventory_item_id = 1 AND location_id = 1"); err != nil {
		t.Fatal(err)
	}
	if linesRead(t, ctx, tx) == before {
		t.Fatal("the probe did not see a read of reserved_quantities")
	}
}

// TestHeldCountsFoldAndFollowLines (issue #15 item 4): every lifecycle step
// keeps a key's held_counts equal to its lines (CheckInvariant compares
// them), a replenisher pass folds the per-backend rows of the keys it
// visits into one, and the fold never waits for a reservation in flight
// (its row is left for a later pass).
func TestHeldCountsFoldAndFollowLines(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 8)
	now := time.Now()
	c, err := New(db.Pool, holdfast.Config{Strategy: holdfast.StrategySlots, Now: func() time.Time { return now }, LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 100, "test", ""); err != nil {
		t.Fatal(err)
	}
	rows := func() (n, sum int) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, "SELECT count(*), coalesce(sum(held), 0) FROM held_counts WHERE shop_id = 1 AND inventory_item_id = 1").Scan(&n, &sum); err != nil {
			t.Fatal(err)
		}
		return n, sum
	}
	check := func(what string) {
		t.Helper()
		rep, err := c.CheckInvariant(ctx)
		if err != nil || !rep.OK() {
			t.Fatalf("%s: %v %v", what, rep, err)
		}
	}
	// Holds from several connections at once: one held_counts row each.
	var ids []uuid.UUID
	conns := make([]*pgx.Conn, 0, 4)
	for range 4 {
		cn, err := db.Pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer cn.Release()
		conns = append(conns, cn.Conn())
	}
	for i, cn := range conns {
		tx, err := cn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		id := uuid.New()
		if _, err := c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: i + 1}}, TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if n, sum := rows(); n < 2 || sum != 10 {
		t.Fatalf("after reserves from 4 connections: %d rows summing %d, want several rows summing 10", n, sum)
	}
	check("after reserves")
	// Edit, partial claim, release, sweep: counts follow.
	if _, err := c.Edit(ctx, holdfast.EditParams{ShopID: 1, CheckoutID: ids[0], Revision: 2, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 3}}}); err != nil {
		t.Fatal(err)
	}
	check("after edit")
	if _, err := c.ClaimLines(ctx, 1, ids[1], []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Release(ctx, 1, ids[2]); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := c.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	check("after claim, release, sweep")

	// A reservation in flight holds its connection's row; the fold a
	// replenisher pass runs folds the rest into one row without waiting
	// for it.
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 7}}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	tx, err := conns[0].Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	_, sumBefore := rows()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.foldHeld(fctx, []holdfast.Key{k}); err != nil {
		t.Fatalf("fold with a reservation in flight: %v", err)
	}
	if n, sum := rows(); n != 2 || sum != sumBefore {
		t.Fatalf("after a fold beside a reservation in flight: %d rows summing %d, want 2 (stripe 0 and the one in flight) summing %d", n, sum, sumBefore)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	engine.NoteChanged(c.engineClient, 1, []holdfast.Line{{ItemID: 1, LocationID: 1}})
	if _, err := engine.ReplenishChangedOnce(c.engineClient, ctx); err != nil {
		t.Fatal(err)
	}
	if n, sum := rows(); n != 1 || sum != sumBefore+1 {
		t.Fatalf("after the last fold: %d rows summing %d, want 1 summing %d", n, sum, sumBefore+1)
	}
	check("after folds")

	// CheckInvariant catches a count that drifted from the lines.
	if _, err := db.Pool.Exec(ctx, "UPDATE held_counts SET held = held + 1 WHERE shop_id = 1 AND inventory_item_id = 1"); err != nil {
		t.Fatal(err)
	}
	if rep, err := c.CheckInvariant(ctx); err != nil || rep.OK() {
		t.Fatalf("a drifted count: %v %v, want a defect", rep, err)
	}
}
