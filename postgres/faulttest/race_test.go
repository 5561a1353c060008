package faulttest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/faulttest"
)

type actor struct{}

// Extend racing the commit of its checkout's first Reserve: Extend's UPDATE
// runs before the hold is committed (no row), its follow-up read after (the
// hold is held). Found by the history checker (random/commit-cut); this is
// the deterministic schedule, driven through the statement hook. The right
// answers are "extended" or ErrNotFound; ErrLifetimeExceeded is wrong: the
// hold is minutes old, its deadline an hour away. Regression test for
// finding 1 (docs/FAULTS.md), fixed.
var _ = scenario("race/extend-vs-first-reserve", func(t *testing.T) {
	e := faulttest.New(t, faulttest.Options{})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	e.AddKey(k, holdfast.StrategyCounter, 10)
	co := uuid.New()

	atCommit := make(chan struct{}) // the reserve is about to commit
	goCommit := make(chan struct{}) // let it
	reserved := make(chan error, 1) // the reserve returned
	var atOnce, goOnce sync.Once
	var sawUpdate atomic.Bool
	release := func() { goOnce.Do(func() { close(goCommit) }) }
	defer release()
	// Every wait is bounded: a schedule the engine's flow no longer allows
	// fails the test instead of hanging it.
	wait := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		case <-time.After(10 * time.Second):
			return false
		}
	}
	e.Hook.SetBeforeStatement(func(ctx context.Context, _ *pgx.Conn, sql string) {
		switch ctx.Value(actor{}) {
		case "reserve":
			if strings.EqualFold(strings.TrimSpace(sql), "commit") {
				atOnce.Do(func() { close(atCommit) })
				wait(goCommit)
			}
		case "extend":
			if strings.Contains(sql, "UPDATE holds") {
				sawUpdate.Store(true)
				return
			}
			if sawUpdate.Load() && !isCommitSQL(sql) {
				// extend_hold found no row; commit the reserve before the
				// statement after it, which decides the answer.
				release()
				select {
				case err := <-reserved:
					reserved <- err
				case <-time.After(10 * time.Second):
				}
			}
		}
	})
	go func() {
		_, err := e.Client.Reserve(context.WithValue(ctx, actor{}, "reserve"),
			holdfast.ReserveParams{ShopID: 1, CheckoutID: co, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}}, TTL: 5 * time.Minute})
		reserved <- err
	}()
	if !wait(atCommit) {
		release()
		t.Fatal("the reserve never reached its COMMIT through the hook: the engine's flow changed; update the schedule")
	}
	_, err := e.Client.Extend(context.WithValue(ctx, actor{}, "extend"), 1, co, 10*time.Minute)
	release()
	e.Hook.SetBeforeStatement(nil)
	select {
	case rerr := <-reserved:
		if rerr != nil {
			t.Fatalf("reserve: %v", rerr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the reserve did not return")
	}
	if err != nil && !errors.Is(err, holdfast.ErrNotFound) {
		e.Violation("extend racing the first reserve answered %v; want success or ErrNotFound", err)
	}
	e.Tally.Inject("extend racing its reservation's commit", 1)
	e.Verify(ctx)
})

func isCommitSQL(sql string) bool { return strings.EqualFold(strings.TrimSpace(sql), "commit") }

// A refill must read the key's buffer, its holds and its stock in one
// snapshot. Here a reservation commits right before the refill's statement
// runs (the statement hook holds the refill back): the refill sees the
// reservation's hold and its taken units together and adds only what is
// missing. A refill that read the holds in an earlier statement than the
// buffer would count the reservation's units in neither and add them
// again: oversold (scripts/mutate's "refill split into separate
// statements").
var _ = scenario("race/refill-snapshot", func(t *testing.T) {
	e := faulttest.New(t, faulttest.Options{Strategy: holdfast.StrategyPool, PoolCap: 5,
		Config: func(c *holdfast.Config) { c.LowWaterPercent = 100 }})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 9, LocationID: 1}
	e.AddKey(k, holdfast.StrategyPool, 8) // 5 pooled (the cap), 3 in stock only
	first := uuid.New()
	lines := []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 3}}
	e.Register(1, first, lines)
	if _, err := e.Reserve(ctx, 0, 1, first, lines, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var raced atomic.Bool
	second := uuid.New()
	lines2 := []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 2}}
	e.Register(1, second, lines2)
	e.Hook.SetBeforeStatement(func(ctx context.Context, _ *pgx.Conn, sql string) {
		if ctx.Value(actor{}) != "replenish" || !strings.Contains(sql, "Top up the allocation buffers") {
			return
		}
		once.Do(func() {
			rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := e.Reserve(rctx, 1, 1, second, lines2, 10*time.Minute); err != nil {
				t.Errorf("reserve while the refill waits: %v", err)
				return
			}
			raced.Store(true)
		})
	})
	if _, err := e.Client.Replenish(context.WithValue(ctx, actor{}, "replenish")); err != nil {
		t.Fatalf("replenish: %v", err)
	}
	e.Hook.SetBeforeStatement(nil)
	if !raced.Load() {
		t.Fatal("the replenisher never reached its refill statement with a reservation in between: the engine's flow changed; update the schedule")
	}
	e.Tally.Inject("reservation committing right before a refill", 1)
	if l := level(t, e, k); l.Pooled+l.Held > l.Available {
		e.Violation("refill raced a reservation: pooled %d + held %d > available %d", l.Pooled, l.Held, l.Available)
	}
	e.Verify(ctx)
})

// Carts lock their keys in one global order, whatever order their lines
// come in: two carts with the same keys in opposite orders never deadlock.
// The interleaving is forced: another session holds the first key's
// counter row; cart A (keys 1, 2) queues on it; cart B (keys 2, 1) starts;
// the row is let go. In key order B queues behind A on key 1 and both
// succeed without a deadlock; in caller order B would hold key 2 while
// waiting for key 1 and A key 1 while waiting for key 2: SQLSTATE 40P01
// (scripts/mutate's "lines locked in caller order").
var _ = scenario("race/cart-lock-order", func(t *testing.T) {
	var retries sync.Map
	e := faulttest.New(t, faulttest.Options{Strategy: holdfast.StrategyCounter, Config: func(c *holdfast.Config) {
		c.Observer = retryCounter{&retries}
	}})
	ctx := context.Background()
	k1 := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	k2 := holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}
	e.AddKey(k1, holdfast.StrategyCounter, 10)
	e.AddKey(k2, holdfast.StrategyCounter, 10)
	for round := range rounds(2) {
		tx, err := e.Admin.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT 1 FROM inventory_counters WHERE inventory_item_id = 1 FOR UPDATE"); err != nil {
			t.Fatal(err)
		}
		carts := [][]holdfast.Line{
			{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 1}},
			{{ItemID: 2, LocationID: 1, Quantity: 1}, {ItemID: 1, LocationID: 1, Quantity: 1}},
		}
		errs := make(chan error, 2)
		for i, lines := range carts {
			co := uuid.New()
			e.Register(1, co, lines)
			go func() {
				_, err := e.Reserve(ctx, i, 1, co, lines, 10*time.Minute)
				errs <- err
			}()
			waitLockWaiters(t, e, i+1)
		}
		tx.Rollback(ctx)
		for range carts {
			if err := <-errs; err != nil {
				e.Violation("round %d: cart with opposite line order: %v", round, err)
			}
		}
		e.Tally.Inject("carts with opposite line orders forced to interleave", 1)
	}
	if v, ok := retries.Load("40P01"); ok && v.(int) > 0 {
		e.Violation("%d deadlocks (40P01) between two carts: lines are not locked in one global order", v.(int))
	}
	e.Verify(ctx)
})

// waitLockWaiters waits, polling with a generous bound, until n backends
// of the test database wait for a lock.
func waitLockWaiters(t *testing.T, e *faulttest.Env, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got int
		if err := e.Admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends waiting for a lock after 30s, want %d", got, n)
		}
		time.Sleep(2 * time.Millisecond) // polling for an event, bounded above
	}
}
