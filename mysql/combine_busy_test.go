package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestCombinerOneBatchPerKey: a batch key has one counter row here
// (CombineOverlap 1), so while one batch waits for key A's row (held by
// another transaction) the client's later requests of A wait in its queue
// for that batch's runner instead of starting a second batch on the same
// row; the other runner stays free, and a request of key B is served
// meanwhile. Every request of A is served once the row is free.
func TestCombinerOneBatchPerKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := mysqltest.DB(t, 20)
	c, err := mysql.New(db.DB, holdfast.Config{Strategy: holdfast.StrategyBatch, LockTimeout: time.Minute, StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	a, b := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}
	for _, k := range []holdfast.Key{a, b} {
		n := 100
		if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	blocker, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blocker.Rollback() })
	var units int
	if err := blocker.QueryRowContext(ctx, "SELECT units FROM inventory_counters WHERE shop_id = 1 AND inventory_item_id = 1 AND location_id = 1 FOR UPDATE").Scan(&units); err != nil {
		t.Fatal(err)
	}
	// The reservations' statements in progress, each waiting for the row
	// (INNODB_TRX misses MariaDB's waiting statements: inflight_test.go).
	lockWaits := func() int {
		var n int
		if err := db.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INFO LIKE '%route=''reserve''%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond) // polling for an event, bounded above
		}
	}
	reserve := func(k holdfast.Key) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(),
				Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}})
			done <- err
		}()
		return done
	}
	// A1 waits on the plain path (alone in flight), A2 in a batch.
	var as []chan error
	for i := range 2 {
		as = append(as, reserve(a))
		waitFor("reservation A to wait for the row", func() bool { return lockWaits() == i+1 })
	}
	// A3 queues behind A2's batch rather than start a second one.
	as = append(as, reserve(a))
	waitFor("A3 to queue", func() bool { p, _ := mysql.CombinerLoad(c); return p == 1 })
	select {
	case err := <-reserve(b):
		if err != nil {
			t.Fatalf("reservation of B: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reservation of B waited: both runners were busy on key A's row")
	}
	if w := lockWaits(); w != 2 {
		p, _ := mysql.CombinerLoad(c)
		t.Fatalf("after B: %d transactions wait for a lock (%d queued), want 2 (A1, A2's batch)", w, p)
	}
	if err := blocker.Rollback(); err != nil {
		t.Fatal(err)
	}
	for i, done := range as {
		if err := <-done; err != nil {
			t.Errorf("A%d: %v", i+1, err)
		}
	}
	if lv, err := c.Level(ctx, a); err != nil || lv.Held != 3 {
		t.Fatalf("level of A: %+v, %v; want 3 held", lv, err)
	}
}
