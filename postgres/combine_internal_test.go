package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// combineRig is a client on batch keys A (item 1), B (item 2) and C (item
// 3), with the counter rows of A and C held by an open ReserveTx and both
// combiner runners waiting on them in batches (A2 on A, A3 on C): the
// exact state in which the combiner's answers used to go wrong (#10 item
// 2).
type combineRig struct {
	t       *testing.T
	c       *Client
	db      *pgtest.Database
	blocker pgx.Tx
	cancel  []context.CancelFunc // A1, A2, A3
	done    []chan error
	errs    []error
}

func (r *combineRig) key(item int64) holdfast.Key {
	return holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}
}

func (r *combineRig) params(item int64) holdfast.ReserveParams {
	return holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: 1}}}
}

// lockWaiters is how many sessions of the test's database wait for a lock.
func (r *combineRig) lockWaiters() int {
	var n int
	if err := r.db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *combineRig) pending() int {
	n, _ := engine.CombinerLoad(r.c.engineClient)
	return n
}

func (r *combineRig) running() int {
	_, n := engine.CombinerLoad(r.c.engineClient)
	return n
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// newCombineRig builds the rig; setup runs on the database before anything
// is locked.
func newCombineRig(t *testing.T, lockWait time.Duration, setup string) *combineRig {
	t.Helper()
	db := pgtest.DB(t, 20)
	c, err := New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyBatch, LockTimeout: time.Minute, StatementTimeout: time.Minute,
		IdleInTransactionTimeout: time.Minute, CombineLockWait: lockWait})
	if err != nil {
		t.Fatal(err)
	}
	r := &combineRig{t: t, c: c, db: db}
	ctx := context.Background()
	if setup != "" {
		if _, err := db.Pool.Exec(ctx, setup); err != nil {
			t.Fatal(err)
		}
	}
	for _, item := range []int64{1, 2, 3} {
		if _, err := c.SetAvailable(ctx, r.key(item), 100, "stock", ""); err != nil {
			t.Fatal(err)
		}
	}
	r.blocker, err = db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.blocker.Rollback(context.Background()) })
	for _, item := range []int64{1, 3} {
		if _, err := c.ReserveTx(ctx, r.blocker, r.params(item)); err != nil {
			t.Fatal(err)
		}
	}
	// Every counter row of A and C: a batch key has one per stripe
	// (strategies.go), and the ReserveTx took from one of them.
	if _, err := r.blocker.Exec(ctx, `SELECT 1 FROM inventory_counters WHERE shop_id = 1 AND inventory_item_id IN (1, 3)
		ORDER BY inventory_item_id, slot FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// A1 waits on the plain path, A2 (key A) and A3 (key C) in one batch
	// each: both runners are busy.
	r.errs = make([]error, 3)
	for i := range 3 {
		actx, cancel := context.WithCancel(ctx)
		r.cancel = append(r.cancel, cancel)
		done := make(chan error, 1)
		r.done = append(r.done, done)
		item := int64(1)
		if i == 2 {
			item = 3
		}
		go func() {
			_, err := c.Reserve(actx, r.params(item))
			done <- err
		}()
		waitUntil(t, "reservation A to wait for the row", func() bool { return r.lockWaiters() == i+1 })
	}
	return r
}

// release commits the blocking ReserveTx and waits for A1..A3 and the
// runners.
func (r *combineRig) release() {
	if err := r.blocker.Commit(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	for i, d := range r.done {
		if d != nil {
			r.errs[i] = <-d
		}
	}
	waitUntil(r.t, "the runners to finish", func() bool { return r.running() == 0 })
}

func (r *combineRig) checkInvariant() {
	rep, err := r.c.CheckInvariant(context.Background())
	if err != nil || !rep.OK() {
		r.t.Fatalf("invariant: %v %v", rep, err)
	}
}

// TestCombinerBatchDoesNotWaitOnReserveTx: a caller's ReserveTx holding
// key A's counter row keeps both batch runners waiting; a reservation of
// key B must still be served while that transaction stays open.
func TestCombinerBatchDoesNotWaitOnReserveTx(t *testing.T) {
	t.Parallel()
	r := newCombineRig(t, 0, "")
	done := make(chan error, 1)
	go func() {
		_, err := r.c.Reserve(context.Background(), r.params(2))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reservation of B: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reservation of B waited for a row lock of key A held by a ReserveTx")
	}
	r.release()
	for i, err := range r.errs {
		if err != nil {
			t.Errorf("A%d: %v", i+1, err)
		}
	}
	r.checkInvariant()
}

// TestCombinerCallerLeaves: a caller that leaves while its request is
// still queued is told "nothing happened" and its request is dropped
// before its batch starts; a caller that leaves while its batch runs is
// told the outcome is unknown (never "nothing happened").
func TestCombinerCallerLeaves(t *testing.T) {
	t.Parallel()
	r := newCombineRig(t, time.Minute, "")
	ctx, cancel := context.WithCancel(context.Background())
	pb := r.params(2)
	done := make(chan error, 1)
	go func() {
		_, err := r.c.Reserve(ctx, pb)
		done <- err
	}()
	waitUntil(t, "B to queue behind the busy runners", func() bool { return r.pending() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, holdfast.ErrOutcomeUnknown) {
		t.Fatalf("queued caller that left: %v, want the context error", err)
	}
	// A2 is inside a running batch.
	r.cancel[1]()
	r.errs[1] = <-r.done[1]
	r.done[1] = nil
	r.release()
	if !errors.Is(r.errs[1], holdfast.ErrOutcomeUnknown) || errors.Is(r.errs[1], context.Canceled) {
		t.Fatalf("caller that left a running batch: %v, want ErrOutcomeUnknown", r.errs[1])
	}
	if _, err := r.c.Hold(context.Background(), 1, pb.CheckoutID); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("the dropped request was served anyway: %v", err)
	}
	r.checkInvariant()
}

// TestCombinerOneFailureFailsNoOne: one request of a batch that makes the
// batch's statement fail (here a trigger refuses its checkout) fails
// alone; the other requests of its batch get their holds.
func TestCombinerOneFailureFailsNoOne(t *testing.T) {
	t.Parallel()
	bad := uuid.New()
	r := newCombineRig(t, time.Minute, `
CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.checkout_id = '`+bad.String()+`' THEN RAISE EXCEPTION 'test: refused'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER test_refuse BEFORE INSERT ON holds FOR EACH ROW EXECUTE FUNCTION test_refuse();`)
	pbad, good := r.params(2), r.params(2)
	pbad.CheckoutID = bad
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, p := range []holdfast.ReserveParams{pbad, good} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.c.Reserve(context.Background(), p)
		}()
		waitUntil(t, "the request to queue", func() bool { return r.pending() == i+1 })
	}
	r.release()
	wg.Wait()
	if errs[0] == nil {
		t.Fatal("the refused checkout was reserved")
	}
	if errs[1] != nil {
		t.Fatalf("a request of the same batch failed with the refused one: %v", errs[1])
	}
	if h, err := r.c.Hold(context.Background(), 1, good.CheckoutID); err != nil || h.Status != holdfast.StatusHeld {
		t.Fatalf("good request: %+v %v", h, err)
	}
	r.checkInvariant()
}
