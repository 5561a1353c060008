package mysql

import (
	"context"
	"database/sql"
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
// The error, if any, is reported before the test ends (the goroutine is
// waited for at cleanup, after the blocker's rollback).
func (r *optimisticRig) start(n int) chan []*holdfast.Hold {
	done := make(chan []*holdfast.Hold, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		got, err := r.attempt(n)
		if err != nil {
			r.t.Errorf("combined attempt: %v", err)
		}
		done <- got
	}()
	r.t.Cleanup(func() { <-finished })
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

// waiting polls for the client's combined batch waiting for k's counter
// row, at its first lock or at its take (a reserve statement of either
// that has run for 100 ms; INNODB_TRX misses MariaDB's waiting statements:
// inflight_test.go), and answers "take" or "lock".
func (r *optimisticRig) waiting() string {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var info string
		err := r.db.DB.QueryRowContext(r.ctx, `SELECT INFO FROM information_schema.PROCESSLIST
			WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND TIME_MS >= 100
			  AND INFO LIKE '%route=''reserve''%'
			  AND (INFO LIKE '%Take q units%' OR INFO LIKE '%Lock one counter row%') LIMIT 1`).Scan(&info)
		switch {
		case err == nil && strings.Contains(info, "Take q units"):
			return "take"
		case err == nil:
			return "lock"
		case time.Now().After(deadline):
			r.t.Fatalf("no batch waits for the counter row: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // polling for an event, bounded above
	}
}

// uncommittedHolds counts k's shop's holds, uncommitted ones included.
func (r *optimisticRig) uncommittedHolds() int {
	r.t.Helper()
	tx, err := r.db.DB.BeginTx(r.ctx, &sql.TxOptions{Isolation: sql.LevelReadUncommitted, ReadOnly: true})
	if err != nil {
		r.t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(r.ctx, "SELECT COUNT(*) FROM holds WHERE shop_id = ?", r.k.ShopID).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// waitAtTake locks k's counter row in a transaction of its own with stmt
// (rolled back at the test's end unless ended before), starts a batch of
// three one-unit requests, and fails the test unless the batch comes to
// wait for the row at its take.
func (r *optimisticRig) waitAtTake(stmt string) (*sql.Tx, chan []*holdfast.Hold) {
	r.t.Helper()
	blocker, err := r.db.DB.BeginTx(r.ctx, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := blocker.ExecContext(r.ctx, stmt); err != nil {
		_ = blocker.Rollback()
		r.t.Fatal(err)
	}
	done := r.start(3)
	// Registered after start's: cleanups run last first, so the row is
	// free before the test waits for the batch.
	r.t.Cleanup(func() { _ = blocker.Rollback() })
	if at := r.waiting(); at != "take" {
		r.t.Fatalf("the batch waits at its %s, want its take", at)
	}
	return blocker, done
}

// TestOptimisticBatchTakesLast: a deep key's batch writes its holds while
// another transaction holds the key's counter row, and waits only at its
// take, so that two batches of the key overlap but for their takes and
// COMMITs. It fails when the batch locks the row first.
func TestOptimisticBatchTakesLast(t *testing.T) {
	t.Parallel()
	r := newOptimisticRig(t, 2*OptimisticDepth)
	blocker, done := r.waitAtTake("SELECT units FROM inventory_counters WHERE shop_id = 1 FOR UPDATE")
	if n := r.uncommittedHolds(); n != 4 {
		t.Fatalf("%d holds while the batch waits, want 4: the rig's and the batch's 3, written before its take", n)
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
	blocker, done := r.waitAtTake("UPDATE inventory_counters SET units = 1 WHERE shop_id = 1")
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
