package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestCombinerOneBatchPerKey: while one batch of a client waits on key A's
// counter row (held here by an open ReserveTx, with a long
// CombineLockWait), the client's later requests of A wait in its queue for
// that batch's runner instead of starting a second batch on the same row,
// so the other runner stays free: a request of key B is served meanwhile.
// Every request of A is served once the row is free.
func TestCombinerOneBatchPerKey(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 20)
	c, err := New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyBatch, LockTimeout: time.Minute, StatementTimeout: time.Minute,
		IdleInTransactionTimeout: time.Minute, CombineLockWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	r := &combineRig{t: t, c: c, db: db}
	ctx := context.Background()
	for _, item := range []int64{1, 2} {
		if _, err := c.SetAvailable(ctx, r.key(item), 100, "stock", ""); err != nil {
			t.Fatal(err)
		}
	}
	r.blocker, err = db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.blocker.Rollback(context.Background()) })
	if _, err := c.ReserveTx(ctx, r.blocker, r.params(1)); err != nil {
		t.Fatal(err)
	}
	// A1 waits on the plain path (alone in flight), A2 in a batch.
	for i := range 2 {
		done := make(chan error, 1)
		r.done = append(r.done, done)
		go func() {
			_, err := c.Reserve(ctx, r.params(1))
			done <- err
		}()
		waitUntil(t, "reservation A to wait for the row", func() bool { return r.lockWaiters() == i+1 })
	}
	// A3 queues behind A2's batch.
	done := make(chan error, 1)
	r.done = append(r.done, done)
	go func() {
		_, err := c.Reserve(ctx, r.params(1))
		done <- err
	}()
	waitUntil(t, "A3 to queue", func() bool { return r.pending() == 1 })
	b := make(chan error, 1)
	go func() {
		_, err := c.Reserve(ctx, r.params(2))
		b <- err
	}()
	select {
	case err := <-b:
		if err != nil {
			t.Fatalf("reservation of B: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reservation of B waited: both runners were busy on key A's row")
	}
	if w, p := r.lockWaiters(), r.pending(); w != 2 || p != 1 {
		t.Fatalf("after B: %d sessions wait for a lock and %d requests are queued, want 2 (A1, A2's batch) and 1 (A3)", w, p)
	}
	r.errs = make([]error, 3)
	r.release()
	for i, err := range r.errs {
		if err != nil {
			t.Errorf("A%d: %v", i+1, err)
		}
	}
	r.checkInvariant()
}
