package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/engine/driver"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// stripesRig is a batch client on key k with units units, and a blocker
// transaction to hold counter rows of k with. A key of StripeDepth units
// or more has been seen deep by one batch (one unit held).
type stripesRig struct {
	t       *testing.T
	c       *Client
	db      *pgtest.Database
	k       holdfast.Key
	blocker pgx.Tx
	held    int // units held before the test's own reservations
}

func newStripesRig(t *testing.T, conns, units int) *stripesRig {
	t.Helper()
	ctx := context.Background()
	db := pgtest.DB(t, conns)
	c, err := New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyBatch, LockTimeout: time.Minute, StatementTimeout: time.Minute,
		IdleInTransactionTimeout: time.Minute, CombineLockWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	r := &stripesRig{t: t, c: c, db: db, k: holdfast.Key{ShopID: 1, ItemID: 8, LocationID: 1}}
	if _, err := c.SetAvailable(ctx, r.k, units, "stock", ""); err != nil {
		t.Fatal(err)
	}
	if units >= StripeDepth {
		// A batch learns the key's depth (a shallow one holds every row).
		if got, _, err := c.combinedAttempt(ctx, []*driver.Reservation{r.reservation()}, 0); err != nil || got[0] == nil || !c.depth.Deep(r.k) {
			t.Fatalf("the first batch of a key of %d units: %v, %v, deep %v", units, got, err, c.depth.Deep(r.k))
		}
		r.held = 1
	}
	if r.blocker, err = db.Pool.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.blocker.Rollback(context.Background()) })
	return r
}

// checkHeld fails the test unless the key holds want units in holds and
// the invariant holds.
func (r *stripesRig) checkHeld(ctx context.Context, want int) {
	r.t.Helper()
	if lv, err := r.c.Level(ctx, r.k); err != nil || lv.Held != want {
		r.t.Fatalf("level: %+v, %v; want %d held", lv, err, want)
	}
	if rep, err := r.c.CheckInvariant(ctx); err != nil || !rep.OK() {
		r.t.Fatalf("invariant: %v %v", rep, err)
	}
}

// lock locks k's counter rows of the given stripes in the blocker.
func (r *stripesRig) lock(stripes ...int) {
	r.t.Helper()
	if _, err := r.blocker.Exec(context.Background(), `SELECT 1 FROM inventory_counters
		WHERE shop_id = $1 AND inventory_item_id = $2 AND location_id = $3 AND slot = ANY($4) FOR UPDATE`,
		r.k.ShopID, r.k.ItemID, r.k.LocationID, stripes); err != nil {
		r.t.Fatal(err)
	}
}

func (r *stripesRig) lockWaiters() int {
	var n int
	if err := r.db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *stripesRig) reservation() *driver.Reservation {
	return &driver.Reservation{Shop: r.k.ShopID, Checkout: uuid.New(), TTL: 10 * time.Minute,
		Lines: []holdfast.Line{{ItemID: r.k.ItemID, LocationID: r.k.LocationID, Quantity: 1}}}
}

// TestCombinedStripes: a batch key keeps one counter row per stripe, the
// refill spreading its units over them, and a batch of a deep key takes
// from its own stripe's row only: while another transaction holds stripe
// 0's row, a batch on stripe 1 commits, and one on stripe 0 waits for the
// row.
func TestCombinedStripes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newStripesRig(t, 6, 2*StripeDepth)
	var rows, units int
	if err := r.db.Pool.QueryRow(ctx, `SELECT count(*), sum(units) FROM inventory_counters
		WHERE shop_id = $1 AND inventory_item_id = $2 AND location_id = $3`, r.k.ShopID, r.k.ItemID, r.k.LocationID).Scan(&rows, &units); err != nil {
		t.Fatal(err)
	}
	if rows != batchStripes || units != 2*StripeDepth-1 {
		t.Fatalf("the batch key's counter rows: %d with %d units, want %d with %d", rows, units, batchStripes, 2*StripeDepth-1)
	}
	r.lock(0)
	done := make(chan error, 1)
	go func() {
		got, _, err := r.c.combinedAttempt(ctx, []*driver.Reservation{r.reservation(), r.reservation()}, 0)
		if err == nil && (got[0] == nil || got[1] == nil) {
			t.Errorf("stripe 0's batch granted %v, want both", got)
		}
		done <- err
	}()
	waitUntil(t, "stripe 0's batch to wait for its row", func() bool { return r.lockWaiters() == 1 })
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, _, err := r.c.combinedAttempt(sctx, []*driver.Reservation{r.reservation(), r.reservation(), r.reservation()}, 1)
	if err != nil || got[0] == nil || got[1] == nil || got[2] == nil {
		t.Fatalf("stripe 1's batch beside a locked stripe 0: %v, %v; want 3 holds", got, err)
	}
	if err := r.blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("stripe 0's batch: %v", err)
	}
	r.checkHeld(ctx, r.held+5)
}

// TestCombinerOverlapsOneKey: two batches of one hot key run at once, one
// per stripe — with both rows held by another transaction, both batches
// wait at them rather than the second queueing behind the first — and
// every reservation is served once the rows are free.
func TestCombinerOverlapsOneKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newStripesRig(t, 14, 2*StripeDepth)
	r.lock(0, 1)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.c.Reserve(ctx, holdfast.ReserveParams{ShopID: r.k.ShopID, CheckoutID: uuid.New(),
				Lines: []holdfast.Line{{ItemID: r.k.ItemID, LocationID: r.k.LocationID, Quantity: 1}}})
		}()
	}
	// The first reservation, alone, may take the plain path and wait
	// there; the two batches wait beside it.
	waitUntil(t, "two batches of the key to wait for its rows", func() bool {
		_, running := engine.CombinerLoad(r.c.engineClient)
		return running == 2 && r.lockWaiters() >= 2
	})
	if err := r.blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("reservation %d: %v", i, err)
		}
	}
	r.checkHeld(ctx, r.held+n)
}

// TestShallowBatchHoldsEveryRow: a batch of a key below StripeDepth holds
// every counter row of it, whatever its stripe — while another
// transaction holds stripe 0's row, a batch on stripe 1 waits for it —
// and grants from the rows' sum, taking from each in slot order; the
// driver lets one such batch of the key run at a time.
func TestShallowBatchHoldsEveryRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newStripesRig(t, 6, 10) // 5 units a row
	if n := (*engineDriver)(r.c).CombineOverlap(r.k); n != 1 {
		t.Fatalf("CombineOverlap of a shallow key: %d, want 1", n)
	}
	r.lock(0)
	type answer struct {
		got []*holdfast.Hold
		err error
	}
	done := make(chan answer, 1)
	go func() {
		seven := r.reservation()
		seven.Lines[0].Quantity = 7 // more than a row has
		got, _, err := r.c.combinedAttempt(ctx, []*driver.Reservation{seven, r.reservation(), r.reservation()}, 1)
		done <- answer{got, err}
	}()
	waitUntil(t, "stripe 1's batch of a shallow key to wait for stripe 0's row", func() bool { return r.lockWaiters() == 1 })
	if err := r.blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.got[0] == nil || a.got[1] == nil || a.got[2] == nil {
		t.Fatalf("the batch: %v, %v; want 9 units in 3 holds", a.got, a.err)
	}
	var rows []int
	if err := r.db.Pool.QueryRow(ctx, `SELECT array_agg(units ORDER BY slot) FROM inventory_counters
		WHERE shop_id = $1 AND inventory_item_id = $2 AND location_id = $3`, r.k.ShopID, r.k.ItemID, r.k.LocationID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0] != 0 || rows[1] != 1 {
		t.Fatalf("the rows after 9 of 10 units: %v, want [0 1] (slot 0's first)", rows)
	}
	if rep, err := r.c.CheckInvariant(ctx); err != nil || !rep.OK() {
		t.Fatalf("invariant: %v %v", rep, err)
	}
}

// TestDeepBatchSaysElsewhere: a batch of a deep key whose stripe's row
// cannot serve a request, while the key's other row can, says so
// (elsewhere: the engine sends it through one more batch, on the other
// stripe); a request neither row can serve, counted down in order, is not
// sent elsewhere.
func TestDeepBatchSaysElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newStripesRig(t, 6, 2*StripeDepth)
	// Stripe 1's row emptied (units out of the buffer: the invariant
	// allows fewer), stripe 0's left with 3.
	if _, err := r.db.Pool.Exec(ctx, `UPDATE inventory_counters SET units = CASE slot WHEN 0 THEN 3 ELSE 0 END
		WHERE shop_id = $1 AND inventory_item_id = $2 AND location_id = $3`, r.k.ShopID, r.k.ItemID, r.k.LocationID); err != nil {
		t.Fatal(err)
	}
	two := r.reservation()
	two.Lines[0].Quantity = 2
	got, elsewhere, err := r.c.combinedAttempt(ctx, []*driver.Reservation{two, r.reservation(), r.reservation()}, 1)
	if err != nil || got[0] != nil || got[1] != nil || got[2] != nil {
		t.Fatalf("a batch on an empty row: %v, %v; want nothing granted", got, err)
	}
	if !elsewhere[0] || !elsewhere[1] || elsewhere[2] {
		t.Fatalf("elsewhere: %v; want the first two (3 units on the other row), not the third", elsewhere)
	}
}

// TestShallowBatchBesideAnother: a batch of a shallow key while another
// batch of it from the same client runs (one the engine let overlap while
// the key was deep) takes its stripe's row only: while the first, on
// stripe 0, waits for row 0, the second, on stripe 1, commits.
func TestShallowBatchBesideAnother(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newStripesRig(t, 6, 10) // shallow: 5 units a row
	r.lock(0)
	done := make(chan error, 1)
	go func() {
		_, _, err := r.c.combinedAttempt(ctx, []*driver.Reservation{r.reservation()}, 0)
		done <- err
	}()
	waitUntil(t, "the first batch to wait for row 0", func() bool { return r.lockWaiters() == 1 })
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, _, err := r.c.combinedAttempt(sctx, []*driver.Reservation{r.reservation(), r.reservation()}, 1)
	if err != nil || got[0] == nil || got[1] == nil {
		t.Fatalf("the second batch, beside the first: %v, %v; want 2 holds from row 1", got, err)
	}
	if err := r.blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the first batch: %v", err)
	}
	if lv, err := r.c.Level(ctx, r.k); err != nil || lv.Held != 3 {
		t.Fatalf("level: %+v, %v; want 3 held", lv, err)
	}
	if rep, err := r.c.CheckInvariant(ctx); err != nil || !rep.OK() {
		t.Fatalf("invariant: %v %v", rep, err)
	}
}

// TestBatchTakesNeverFallShort: batch_reserve.sql takes exactly the
// units of the holds it creates, whatever rows it takes them from: asked
// for more than the locked rows hold (which the batch never grants), it
// fails on units' CHECK — no hold is left without its units — for a
// shallow key (every row) and a deep key's stripe row alike.
func TestBatchTakesNeverFallShort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newStripesRig(t, 4, 10) // 5 units a row
	for _, shallow := range []bool{true, false} {
		qty := int32(11) // more than both rows
		var sShops, sItems, sLocs []int64
		if shallow {
			sShops, sItems, sLocs = []int64{r.k.ShopID}, []int64{r.k.ItemID}, []int64{r.k.LocationID}
		} else {
			qty = 6 // more than stripe 0's row
		}
		tx, err := r.db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, r.c.q(ctx, holdfast.RouteReserve, "batch_lock"),
			[]int64{r.k.ShopID}, []int64{r.k.ItemID}, []int64{r.k.LocationID}, 0, []bool{shallow}); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, r.c.q(ctx, holdfast.RouteReserve, "batch_reserve"),
			[]string{uuid.NewString()}, []int32{qty}, []int64{time.Minute.Microseconds()},
			[]int64{r.k.ShopID}, []int64{r.k.ItemID}, []int64{r.k.LocationID},
			time.Hour.Microseconds(), r.c.now(), 0, sShops, sItems, sLocs)
		_ = tx.Rollback(ctx)
		if SQLState(err) != sqlstateCheckViolation {
			t.Fatalf("shallow %v: %d units from rows of 5 and 5: %v; want a check violation", shallow, qty, err)
		}
	}
	if lv, err := r.c.Level(ctx, r.k); err != nil || lv.Held != 0 || lv.Pooled != 10 {
		t.Fatalf("level: %+v, %v; want nothing held, 10 pooled", lv, err)
	}
}
