package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestKeyInfoOrderUnderForcedPlan (#10 item 6): with nested loops and merge
// joins off, key_info's join is a hash join whose output follows the
// levels table, not the cart's lines. A mixed-strategy cart (a pool key
// and a counter key, their levels created in the opposite order) must
// still run each line's own take.
func TestKeyInfoOrderUnderForcedPlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyCounter, PoolCap: 10}, 0)
	ctx := context.Background()
	pool := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	counter := holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}
	for i := int64(50); i >= 3; i-- {
		e.stock(holdfast.Key{ShopID: 1, ItemID: i, LocationID: 1}, 1)
	}
	e.stock(counter, 5)
	if _, err := e.c.SetStrategy(ctx, pool, holdfast.StrategyPool, 0); err != nil {
		t.Fatal(err)
	}
	e.stock(pool, 5)
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, "SET LOCAL enable_nestloop = off; SET LOCAL enable_mergejoin = off"); err != nil {
		t.Fatal(err)
	}
	lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 4}, {ItemID: 2, LocationID: 1, Quantity: 4}}
	for i := int64(3); i <= 6; i++ {
		lines = append(lines, holdfast.Line{ItemID: i, LocationID: 1, Quantity: 1})
	}
	if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: lines}); err != nil {
		t.Fatalf("mixed cart under a hash join: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if l := e.level(pool); l.Held != 4 {
		t.Fatalf("pool key: %+v", l)
	}
}

// retryLog is an Observer that records retries by route and SQLSTATE.
type retryLog struct {
	mu      sync.Mutex
	retries []string
}

func (r *retryLog) Op(string, string, time.Duration) {}
func (r *retryLog) Retry(route, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retries = append(r.retries, route+":"+state)
}
func (r *retryLog) Replenished(holdfast.Key, bool, int) {}
func (r *retryLog) Expired(int)                         {}
func (r *retryLog) Claimed(time.Duration)               {}

func (r *retryLog) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.retries...)
}

// TestAdjustLocksBuffersBeforeLevel (#10 item 6): a caller's transaction
// holds a key's counter row (ReserveTx) and then claims on the key (its
// level row) while a stock reduction shrinks the key's buffer. The
// reduction used to lock the level row before the buffer: a deadlock, one
// side aborted by the deadlock detector. In the documented order
// (buffers, then levels) the reduction simply waits.
func TestAdjustLocksBuffersBeforeLevel(t *testing.T) {
	t.Parallel()
	log := &retryLog{}
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyCounter, LockTimeout: time.Minute, Observer: log}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	claimed := uuid.New()
	if _, err := reserve(t, e.c, 1, claimed, one(1, 2)); err != nil {
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
	done := make(chan error, 1)
	go func() {
		_, err := e.c.Adjust(ctx, k, -5, "shrinkage", "")
		done <- err
	}()
	waitFor(t, "the reduction to wait for the counter row", func() bool { return lockWaiters(t, e) == 1 })
	if _, err := e.c.ClaimTx(ctx, tx, 1, claimed); err != nil {
		t.Fatalf("claim in the transaction that holds the counter row: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, r := range log.list() {
		if strings.Contains(r, "40P01") {
			t.Fatalf("deadlock between the reduction and the claim: retries %v", log.list())
		}
	}
	if l := e.level(k); l.Available != 3 || l.Held != 1 || l.Pooled > 2 {
		t.Fatalf("level: %+v", l)
	}
}
