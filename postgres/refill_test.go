package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestReleaseAndSweepNeverWaitForRefill (#10 item 3): a caller's ReserveTx
// holds a counter key's row while it does other work; a release and a
// sweep of other holds on that key must finish at once (their refill is
// optional and skips the key), not wait for the row past lock_timeout and
// fail.
func TestReleaseAndSweepNeverWaitForRefill(t *testing.T) {
	t.Parallel()
	for _, s := range []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategySlots} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			// A long lock_timeout: waiting would show as a wait, not as a
			// retried failure.
			e := newEnv(t, holdfast.Config{Strategy: s, Slots: 1, LockTimeout: time.Minute}, 0)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			e.stock(k, 3)
			released, swept := uuid.New(), uuid.New()
			if _, err := reserve(t, e.c, 1, released, one(1, 1)); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: swept, Lines: one(1, 1), TTL: time.Second}); err != nil {
				t.Fatal(err)
			}
			tx, err := e.db.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1)}); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Second)
			for name, op := range map[string]func() error{
				"release": func() error { _, err := e.c.Release(ctx, 1, released); return err },
				"sweep": func() error {
					n, err := e.c.SweepOnce(ctx)
					if err == nil && n != 1 {
						t.Errorf("sweep expired %d holds, want 1", n)
					}
					return err
				},
			} {
				done := make(chan error, 1)
				go func() { done <- op() }()
				var answered bool
				waitFor(t, name+" to answer or wait", func() bool {
					select {
					case err := <-done:
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						answered = true
						return true
					default:
						return lockWaiters(t, e) > 0
					}
				})
				if !answered {
					t.Fatalf("%s waits for a counter row a ReserveTx holds", name)
				}
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			// The replenisher brings the returned units back.
			if _, err := e.c.Replenish(ctx); err != nil {
				t.Fatal(err)
			}
			if l := e.level(k); l.Held != 1 || l.Pooled != 2 {
				t.Fatalf("level after replenish: %+v", l)
			}
		})
	}
}

// refillLog is an Observer that counts a key's refills, inline (in a
// reserver's path) and background (the replenisher).
type refillLog struct {
	retryLog
	inline, background atomic.Int64
}

func (r *refillLog) Replenished(_ holdfast.Key, inline bool, _ int) {
	if inline {
		r.inline.Add(1)
	} else {
		r.background.Add(1)
	}
}

// TestPoolTopUpBeforeDry (#29 item 4): reservations inside callers'
// transactions that take a quarter of a pool key's cap wake the
// replenisher, which tops the pool up in its own transaction long before
// ReplenishInterval: the pool does not run dry, so no reserver takes the
// key's lock in its caller's transaction (the slow path, where the others
// queue behind each caller's commit).
func TestPoolTopUpBeforeDry(t *testing.T) {
	t.Parallel()
	log := &refillLog{}
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyPool, PoolCap: 8, ReplenishInterval: time.Hour, Observer: log}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 100)
	if _, err := e.c.Replenish(ctx); err != nil {
		t.Fatal(err)
	}
	if l := e.level(k); l.Pooled != 8 {
		t.Fatalf("after the first refill: %+v", l)
	}
	e.c.Start(ctx)
	defer e.c.Stop(ctx) //nolint:errcheck
	before := log.background.Load()
	for i := range 2 { // 2 units: a quarter of the cap
		tx, err := e.db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1)}); err != nil {
			t.Fatalf("reservation %d: %v", i, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Above the 6 units the reservations left: the replenisher, woken by
	// the second one's take, may top up before that take commits, and
	// then refills to 7 (a pool at 7 is above its low-water mark: no
	// later wake brings it to 8). Waiting for 8 timed out under load.
	waitFor(t, "the replenisher to top the pool up", func() bool {
		return log.background.Load() > before && e.level(k).Pooled > 6
	})
	if n := log.inline.Load(); n != 0 {
		t.Fatalf("%d inline refills: a reservation took the slow path", n)
	}
}
