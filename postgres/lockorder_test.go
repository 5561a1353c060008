package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
)

// TestReserveRetryAgainstReleaseLockOrder (#10 item 6, first place): a
// release of a checkout is in flight — its transaction holds the hold's row
// and, having given the units back, the key's counter row — when a retry of
// the checkout's reservation arrives. The retry must go to the hold's row
// first (the lock order) and answer from it, never touch a buffer the
// release holds: it waits (if at all) only at the hold's row, and answers
// ErrHoldReleased once the release commits.
func TestReserveRetryAgainstReleaseLockOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyCounter, LockTimeout: time.Minute}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	id := uuid.New()
	if _, err := reserve(t, e.c, 1, id, one(1, 2)); err != nil {
		t.Fatal(err)
	}
	rel, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Rollback(ctx) //nolint:errcheck
	if _, err := e.c.ReleaseTx(ctx, rel, 1, id); err != nil {
		t.Fatal(err)
	}
	// The scenario needs the release to hold the counter row (it gave the
	// units back into it): checked, or the test would test nothing.
	if err := pgx.BeginFunc(ctx, e.db.Pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "SELECT 1 FROM inventory_counters WHERE shop_id = 1 AND inventory_item_id = 1 AND location_id = 1 FOR UPDATE NOWAIT")
		return err
	}); postgres.SQLState(err) != "55P03" {
		t.Fatalf("the release should hold the key's counter row: %v", err)
	}
	type result struct {
		h   *holdfast.Hold
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := reserve(t, e.c, 1, id, one(1, 2))
		done <- result{h, err}
	}()
	var r *result
	waitFor(t, "the retry to answer, or wait on a lock", func() bool {
		select {
		case x := <-done:
			r = &x
			return true
		default:
			return lockWaiters(t, e) > 0
		}
	})
	if r == nil {
		// Waiting is right only on the hold's row (the release's new row
		// version under the holds key), behind the release: anything else
		// is a lock the release holds after that row, taken by the retry
		// before it. The statement is recognised by its whole text, not by
		// a word in it: pg_stat_activity keeps only the first
		// track_activity_query_size - 1 bytes (1023 by default) of a
		// query, and hold_insert.sql's header comment alone can fill them.
		var q string
		var blockers []int32
		if err := e.db.Pool.QueryRow(ctx, "SELECT query, pg_blocking_pids(pid) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&q, &blockers); err != nil {
			t.Fatal(err)
		}
		insert := postgres.Statement(e.c, holdfast.RouteReserve, "hold_insert")
		if q == "" || !strings.HasPrefix(insert, q) {
			t.Fatalf("the retry waits on a lock the in-flight release holds, not at the hold's row: %s", q)
		}
		if release := rel.Conn().PgConn().PID(); !slices.Contains(blockers, int32(release)) {
			t.Fatalf("the retry waits at the hold's row behind %v, not behind the release (pid %d)", blockers, release)
		}
	}
	if err := rel.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r == nil {
		x := <-done
		r = &x
		if !errors.Is(r.err, holdfast.ErrHoldReleased) {
			t.Fatalf("retry that waited for the release: %+v %v", r.h, r.err)
		}
	} else if r.err != nil || !r.h.Replayed || r.h.Status != holdfast.StatusHeld {
		t.Fatalf("retry during the release: %+v %v", r.h, r.err)
	}
	if _, err := reserve(t, e.c, 1, id, one(1, 2)); !errors.Is(err, holdfast.ErrHoldReleased) {
		t.Fatalf("retry after the release: %v", err)
	}
	if l := e.level(k); l.Held != 0 || l.Sellable != 10 {
		t.Fatalf("level: %+v", l)
	}
}

// TestSlowestReserveLocksKeysBeforeBuffers (#10 item 6, second place): the
// slowest reserve path (a caller's transaction, its buffers short) used to
// lock each key and take its counter row line by line. Cart A = [k1, k2]
// goes that way while another transaction T holds k2's key lock (as a
// refill, an adjustment or a slowest-path reservation of k2 does) and then
// reserves from k1's buffer on the fast path, in the opposite key order
// across its calls. Line by line, A would hold k1's counter row while it
// waits for k2's lock, and T's take of k1 would wait for A: a deadlock.
// Keys first (the documented order: every key lock before any buffer), A
// waits for k2 holding only k1's key lock, which T's fast take never
// needs: T's take answers at once, T commits, A gets both lines.
func TestSlowestReserveLocksKeysBeforeBuffers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyCounter, LockTimeout: time.Minute}, 0)
	ctx := context.Background()
	k1 := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	k2 := holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}
	e.stock(k1, 10)
	e.stock(k2, 10)
	// k2's buffer is empty (its units given out and back, not yet
	// refilled): A's fast take comes up short there and A goes the slowest
	// way, its stock still sellable.
	if _, err := e.db.Pool.Exec(ctx, "UPDATE inventory_counters SET units = 0 WHERE shop_id = 1 AND inventory_item_id = 2"); err != nil {
		t.Fatal(err)
	}
	tt, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tt.Rollback(ctx) //nolint:errcheck
	if _, err := tt.Exec(ctx, "SELECT pg_advisory_xact_lock($1::bigint)", postgres.KeyHash(k2)); err != nil {
		t.Fatal(err)
	}
	ta, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ta.Rollback(ctx) //nolint:errcheck
	type result struct {
		h   *holdfast.Hold
		err error
	}
	aDone := make(chan result, 1)
	go func() {
		h, err := e.c.ReserveTx(ctx, ta, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(),
			Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}, {ItemID: 2, LocationID: 1, Quantity: 2}}})
		aDone <- result{h, err}
	}()
	waitFor(t, "cart A to wait for k2's key lock", func() bool {
		select {
		case r := <-aDone:
			t.Fatalf("cart A answered while T holds k2's key lock: %+v %v", r.h, r.err)
		default:
		}
		return lockWaiters(t, e) == 1
	})
	tDone := make(chan error, 1)
	go func() {
		_, err := e.c.ReserveTx(ctx, tt, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1)})
		tDone <- err
	}()
	var tErr error
	answered := false
	waitFor(t, "T's take of k1 to answer, or wait", func() bool {
		select {
		case tErr = <-tDone:
			answered = true
			return true
		default:
			return lockWaiters(t, e) == 2
		}
	})
	if !answered {
		t.Fatal("T's fast take of k1 waits for cart A, which waits for T's key lock: A holds a buffer of k1 before its lock of k2 (deadlock)")
	}
	if tErr != nil {
		t.Fatalf("T's reservation of k1: %v", tErr)
	}
	if err := tt.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-aDone
	if a.err != nil {
		t.Fatalf("cart A: %v", a.err)
	}
	if err := ta.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if l1, l2 := e.level(k1), e.level(k2); l1.Held != 3 || l2.Held != 2 {
		t.Fatalf("levels: %+v %+v", l1, l2)
	}
}
