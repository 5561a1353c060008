package holdfast_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pgtest"
)

// TestEventsAtomicWithChange (#17): the event is written by the change's
// own transaction. Inside a caller's transaction the event is there before
// COMMIT; killing the backend before COMMIT takes the hold and its event
// away together, and there is no later write that could be lost: the
// committed change has exactly its event.
func TestEventsAtomicWithChange(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 6)
	ctx := context.Background()
	c, err := holdfast.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 10, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	count := func(q pgx.Tx) int {
		t.Helper()
		var n int
		var err error
		if q != nil {
			err = q.QueryRow(ctx, "SELECT count(*) FROM holdfast_events").Scan(&n)
		} else {
			err = db.Pool.QueryRow(ctx, "SELECT count(*) FROM holdfast_events").Scan(&n)
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count(nil)

	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	if _, err := c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}
	if n := count(tx); n != before+1 {
		t.Fatalf("inside the reservation's transaction: %d events, want %d (the event is written with the change)", n, before+1)
	}
	if n := count(nil); n != before {
		t.Fatalf("outside it, before COMMIT: %d events, want %d", n, before)
	}
	// The backend dies between the change and its COMMIT.
	var pid int
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("COMMIT on a terminated backend succeeded")
	}
	conn.Release()
	if n := count(nil); n != before {
		t.Fatalf("after the backend died: %d events, want %d (nothing of the change)", n, before)
	}
	if _, err := c.Hold(ctx, 1, id); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("the killed reservation's hold: %v, want ErrNotFound", err)
	}

	// A committed change has its event, once.
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}
	evs, err := c.Events(ctx, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Type != holdfast.EventHoldCreated || *evs[1].CheckoutID != id {
		t.Fatalf("feed: %+v, want the stocktake and one hold.created", evs)
	}
}

// TestEventsAcrossRestarts (#17): a consumer that stores its cursor and a
// new client on the same database (a restarted process) continue the feed
// with no event lost or repeated, while a retention purge removes only
// old, sequenced events.
func TestEventsAcrossRestarts(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 6)
	ctx := context.Background()
	clock := pgtest.NewClock(time.Time{})
	cfg := holdfast.Config{Now: clock.Now, EventRetention: time.Hour}
	c1, err := holdfast.New(db.Pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c1.SetAvailable(ctx, k, 100, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	reserve := func(c *holdfast.Client) {
		t.Helper()
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		reserve(c1)
	}
	page, err := c1.Events(ctx, 1, 0, 2)
	if err != nil || len(page) != 2 {
		t.Fatalf("first page: %v, %v", page, err)
	}
	cursor := page[1].Cursor
	// Written by the old process, not yet read: the new one must not lose
	// them; and it writes more.
	reserve(c1)
	c2, err := holdfast.New(db.Pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	reserve(c2)
	rest, err := c2.Events(ctx, 1, cursor, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The first page had the stocktake and one reservation: two more
	// reservations were written before the restart, one after.
	if len(rest) != 4 {
		t.Fatalf("after the restart: %d events, want 4", len(rest))
	}
	for i, ev := range rest {
		if ev.Cursor != cursor+int64(i)+1 || ev.Type != holdfast.EventHoldCreated {
			t.Fatalf("after the restart, event %d: %+v (want cursor %d)", i, ev, cursor+int64(i)+1)
		}
	}

	// Retention: past it, the sweeper's purge removes the old events in
	// batches; the cursors of later events do not move.
	clock.Advance(2 * time.Hour)
	if _, err := c2.PurgeOnce(ctx); err != nil {
		t.Fatal(err)
	}
	reserve(c2)
	left, err := c2.Events(ctx, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Cursor != rest[3].Cursor+1 {
		t.Fatalf("after the purge: %+v, want only the new event at cursor %d", left, rest[3].Cursor+1)
	}
}
