package mysql

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// optimisticRig is a client over a fresh database whose one batch key k
// holds units, made deep by one locked batch (of one unit) when units
// reach OptimisticDepth; blocker locks k's counter row from another
// transaction.
type optimisticRig struct {
	t   *testing.T
	db  *mysqltest.Database
	c   *Client
	k   holdfast.Key
	ctx context.Context
}

func newOptimisticRig(t *testing.T, units int) *optimisticRig {
	t.Helper()
	db := mysqltest.DB(t, 8)
	c, err := New(db.DB, holdfast.Config{Strategy: holdfast.StrategyBatch, LockTimeout: time.Minute, StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	r := &optimisticRig{t: t, db: db, c: c, k: holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, ctx: context.Background()}
	if _, err := c.ChangeStock(r.ctx, holdfast.StockChange{Key: r.k, Set: &units, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	got := r.batch(1)
	if got[0] == nil || c.depth.Deep(r.k) != (units-1 >= OptimisticDepth) {
		t.Fatalf("the first batch of a key of %d units: %v, deep %v", units, got, c.depth.Deep(r.k))
	}
	return r
}

// batch runs one combined attempt of n one-unit reservations of k.
func (r *optimisticRig) batch(n int) []*holdfast.Hold {
	r.t.Helper()
	got, err := r.attempt(n)
	if err != nil {
		r.t.Fatalf("combined attempt: %v", err)
	}
	return got
}

// attempt is batch from another goroutine: it answers the error.
func (r *optimisticRig) attempt(n int) ([]*holdfast.Hold, error) {
	lines := []holdfast.Line{{ItemID: r.k.ItemID, LocationID: r.k.LocationID, Quantity: 1}}
	raw, _ := json.Marshal(lines)
	reqs := make([]*reservation, n)
	for i := range reqs {
		reqs[i] = &reservation{Shop: r.k.ShopID, Checkout: uuid.New(), Lines: lines, LinesRaw: raw, TTL: time.Minute}
	}
	return r.c.combinedAttempt(r.ctx, reqs)
}

// start runs attempt(n) in a goroutine; the answer comes on the channel.
func (r *optimisticRig) start(n int) chan []*holdfast.Hold {
	done := make(chan []*holdfast.Hold, 1)
	go func() {
		got, err := r.attempt(n)
		if err != nil {
			r.t.Errorf("combined attempt: %v", err)
		}
		done <- got
	}()
	return done
}

// units reads k's counter row.
func (r *optimisticRig) units() int {
	r.t.Helper()
	var n int
	if err := r.db.DB.QueryRowContext(r.ctx, "SELECT units FROM inventory_counters WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?",
		r.k.ShopID, r.k.ItemID, r.k.LocationID).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// waiting polls for a reserve statement of the client that has run for
// 100 ms (in these tests only a wait for a lock takes that long) and
// answers its text (INNODB_TRX misses MariaDB's waiting statements:
// inflight_test.go).
func (r *optimisticRig) waiting() string {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var info string
		err := r.db.DB.QueryRowContext(r.ctx, `SELECT INFO FROM information_schema.PROCESSLIST
			WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND TIME_MS >= 100
			  AND INFO LIKE '%route=''reserve''%' LIMIT 1`).Scan(&info)
		if err == nil {
			return info
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no reserve statement waits: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // polling for an event, bounded above
	}
}

// TestOptimisticBatchTakesLast: a deep key's batch writes its holds while
// another transaction holds the key's counter row, and waits only at its
// take, so that two batches of the key overlap but for their takes and
// COMMITs. It fails when the batch locks the row first.
func TestOptimisticBatchTakesLast(t *testing.T) {
	t.Parallel()
	r := newOptimisticRig(t, 2*OptimisticDepth)
	blocker, err := r.db.DB.BeginTx(r.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	if _, err := blocker.ExecContext(r.ctx, "SELECT units FROM inventory_counters WHERE shop_id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	done := r.start(3)
	if info := r.waiting(); !strings.Contains(info, "Take q units") {
		t.Fatalf("the batch waits at %.120q, want its take", info)
	}
	var holds int
	if err := r.db.DB.QueryRowContext(r.ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_rows_modified >= 3").Scan(&holds); err != nil || holds == 0 {
		t.Fatalf("the waiting batch has written nothing yet (%d, %v)", holds, err)
	}
	if err := blocker.Rollback(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	for i, h := range got {
		if h == nil {
			t.Fatalf("request %d not granted", i)
		}
	}
	if u := r.units(); u != 2*OptimisticDepth-4 {
		t.Fatalf("units %d, want %d", u, 2*OptimisticDepth-4)
	}
	if n := r.c.combinedShort.Load(); n != 0 {
		t.Fatalf("%d batches ran again", n)
	}
	if len(got) != 3 {
		t.Fatalf("answers %v", got)
	}
}

// TestOptimisticBatchShortRunsLocked: a deep key's batch granted from its
// unlocked read, then another transaction took the key's units before the
// batch's take: the batch rolls back and runs once more, locked, granting
// only what is left. Nothing of its first run stays. It fails without the
// second run (the take's shortfall reaches the caller).
func TestOptimisticBatchShortRunsLocked(t *testing.T) {
	t.Parallel()
	r := newOptimisticRig(t, OptimisticDepth+10)
	blocker, err := r.db.DB.BeginTx(r.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	if _, err := blocker.ExecContext(r.ctx, "UPDATE inventory_counters SET units = 1 WHERE shop_id = 1"); err != nil {
		t.Fatal(err)
	}
	done := r.start(3)
	if info := r.waiting(); !strings.Contains(info, "Take q units") {
		t.Fatalf("the batch waits at %.120q, want its take", info)
	}
	if err := blocker.Commit(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got == nil || got[0] == nil || got[1] != nil || got[2] != nil {
		t.Fatalf("granted %v, want the first request only", got)
	}
	if u := r.units(); u != 0 {
		t.Fatalf("units %d, want 0", u)
	}
	if n := r.c.combinedShort.Load(); n != 1 {
		t.Fatalf("%d batches ran again, want 1", n)
	}
	var holds int
	if err := r.db.DB.QueryRowContext(r.ctx, "SELECT COUNT(*) FROM holds WHERE status = 'held'").Scan(&holds); err != nil || holds != 2 {
		t.Fatalf("%d held holds (%v), want 2: the rig's and the one granted", holds, err)
	}
	if r.c.depth.Deep(r.k) {
		t.Fatal("the key is still deep after its locked batch read 1 unit")
	}
}
