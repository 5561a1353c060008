package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
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
	c, err := postgres.New(db.Pool, holdfast.Config{})
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
	c1, err := postgres.New(db.Pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c1.SetAvailable(ctx, k, 100, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	reserve := func(c *postgres.Client) {
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
	c2, err := postgres.New(db.Pool, cfg)
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
	// A cursor before the purged events is answered with the oldest
	// cursor still available (#24), never a page that skips them.
	_, err = c2.Events(ctx, 1, 0, 0)
	var ce *holdfast.CursorExpiredError
	if !errors.As(err, &ce) || ce.After != 0 || ce.Oldest != rest[3].Cursor {
		t.Fatalf("after=0 once its events were purged: %v, want a *CursorExpiredError with oldest cursor %d", err, rest[3].Cursor)
	}
	left, err := c2.Events(ctx, 1, ce.Oldest, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Cursor != rest[3].Cursor+1 {
		t.Fatalf("after the purge: %+v, want only the new event at cursor %d", left, rest[3].Cursor+1)
	}
}

// TestEventsTwoSequencers (#17): two clients (two processes' worth of
// sequencers) write and read one shop's feed at once; both readers see the
// same events, with contiguous cursors, none twice.
func TestEventsTwoSequencers(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 24)
	ctx := context.Background()
	var cs [2]*postgres.Client
	for i := range cs {
		c, err := postgres.New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyCounter})
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = c
	}
	if _, err := cs[0].SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 1_000_000, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	const writers, each = 6, 20
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(c *postgres.Client) {
			defer wg.Done()
			for range each {
				if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
					t.Error(err)
					return
				}
			}
		}(cs[w%2])
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var seen [2][]int64
	var rg sync.WaitGroup
	for i, c := range cs {
		rg.Add(1)
		go func() {
			defer rg.Done()
			var after int64
			for finished := false; ; {
				select {
				case <-done:
					finished = true
				default:
				}
				page, err := c.Events(ctx, 1, after, 5)
				if err != nil {
					t.Error(err)
					return
				}
				for _, ev := range page {
					seen[i] = append(seen[i], ev.Cursor)
					after = ev.Cursor
				}
				if finished && len(page) == 0 {
					return
				}
			}
		}()
	}
	rg.Wait()
	want := 1 + writers*each
	for i := range seen {
		if len(seen[i]) != want {
			t.Fatalf("reader %d saw %d events, want %d", i, len(seen[i]), want)
		}
		for j, cur := range seen[i] {
			if cur != int64(j+1) {
				t.Fatalf("reader %d: event %d has cursor %d (a gap or a repeat)", i, j, cur)
			}
		}
	}
}

// TestEventsGroupedStatement (#29 item 2, migration 28): the holds one
// statement creates in a shop at one instant are one event row covering
// their cursors; the feed gives each hold its own hold.created, and the
// sequencer derives the key events from every hold of the row (here the
// key sells out through the grouped holds alone).
func TestEventsGroupedStatement(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 4)
	ctx := context.Background()
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 3, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	head, err := c.Events(ctx, 1, 0, 0)
	if err != nil || len(head) != 1 {
		t.Fatalf("the stock change's event: %v, %v", head, err)
	}
	// Three holds by one statement (as a combined batch writes them), their
	// lines beside them so the key's held count covers its stock.
	if _, err := db.Pool.Exec(ctx, `
WITH h AS (
    INSERT INTO holds (checkout_id, shop_id, status, lines, created_at, expires_at, deadline)
    SELECT gen_random_uuid(), 1, 'held', '[{"item_id": 7, "location_id": 1, "quantity": 1}]',
           now(), now() + i * interval '1 minute', now() + interval '1 hour'
    FROM generate_series(1, 3) i
    RETURNING checkout_id, expires_at, created_at
)
INSERT INTO reserved_quantities (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at, created_at)
SELECT 1, 7, 1, checkout_id, 1, expires_at, created_at FROM h`); err != nil {
		t.Fatal(err)
	}
	var rows, n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), max(n) FROM holdfast_events WHERE type = 'hold.created'`).Scan(&rows, &n); err != nil || rows != 1 || n != 3 {
		t.Fatalf("hold.created rows %d, the largest covering %d events (%v): want one row of 3", rows, n, err)
	}
	evs, err := c.Events(ctx, 1, head[0].Cursor, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uuid.UUID]bool{}
	for i, ev := range evs {
		if ev.Cursor != head[0].Cursor+int64(i)+1 {
			t.Fatalf("event %d has cursor %d", i, ev.Cursor)
		}
		if i < 3 {
			if ev.Type != holdfast.EventHoldCreated || ev.CheckoutID == nil || seen[*ev.CheckoutID] || len(ev.Lines) != 1 || ev.ExpiresAt == nil {
				t.Fatalf("event %d: %+v, want a hold.created of its own checkout", i, ev)
			}
			seen[*ev.CheckoutID] = true
		}
	}
	if len(evs) != 4 || evs[3].Type != holdfast.EventKeySoldOut || evs[3].ItemID != 7 {
		t.Fatalf("after the stock change: %+v; want three hold.created and the key's key.sold_out", evs)
	}
}
