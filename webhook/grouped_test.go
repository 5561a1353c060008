package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestGroupedEvents (#29 item 2): the holds a combined batch creates are
// one event row covering several cursors. An endpoint registered while
// such a row waits for its cursors starts after all of its events, and a
// purge keeps the row while an endpoint has received only part of it.
func TestGroupedEvents(t *testing.T) {
	t.Parallel()
	engines(t, testGroupedEvents)
}

func testGroupedEvents(t *testing.T, engine string) {
	clock := pgtest.NewClock(time.Now())
	b := newBackendConfig(t, engine, 40, holdfast.Config{Strategy: holdfast.StrategyBatch, Now: clock.Now,
		EventRetention: time.Hour, EventRetentionMax: 24 * time.Hour})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	const holders = 60
	stock := holders
	b.change(t, holdfast.StockChange{Key: k, Set: &stock, Reason: "stock"})
	enginetest.ReserveConcurrently(t, b.eng, k, holders)

	// Nothing has been sequenced yet (no sequencer runs here): the
	// registration counts every pending event, each hold of a group too.
	ep, err := b.reg.Add(ctx, 1, "http://127.0.0.1:9/hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := b.eng.Events(ctx, 1, 0, holdfast.EventsLimitMax)
	if err != nil {
		t.Fatal(err)
	}
	// The stock change and the holds: the key's sold-out event is derived
	// after, when they are sequenced.
	if len(all) < holders+1 || ep.Cursor != holders+1 || all[holders].Type != holdfast.EventHoldCreated {
		t.Fatalf("registered at cursor %d with %d events committed (the stock change and %d holds): want it after all of them", ep.Cursor, len(all), holders)
	}

	// A group, and an endpoint that has received its first event only.
	var seq, n int64
	q := `SELECT seq, n FROM holdfast_events WHERE shop_id = 1 AND n > 1 ORDER BY seq LIMIT 1`
	if b.db != nil {
		err = b.db.QueryRowContext(ctx, q).Scan(&seq, &n)
	} else {
		err = b.pool.QueryRow(ctx, q).Scan(&seq, &n)
	}
	if err != nil {
		t.Fatalf("a group of the combined holds' events: %v", err)
	}
	if _, err := b.reg.Add(ctx, 1, "http://127.0.0.1:9/partial", &seq); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour) // past the retention, within the cap
	b.purge(t)
	rest, err := b.eng.Events(ctx, 1, seq, holdfast.EventsLimitMax)
	if err != nil {
		t.Fatalf("the rest of a group after a purge, from cursor %d: %v", seq, err)
	}
	if len(rest) == 0 || rest[0].Cursor != seq+1 || int64(len(rest)) < n-1 {
		t.Fatalf("after cursor %d (a group of %d) once purged: %d events from cursor %v; want the group's other %d kept", seq, n, len(rest), rest, n-1)
	}
}
