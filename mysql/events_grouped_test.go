package mysql_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqlstore"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestCombinedEventsGrouped (issue #29 item 2, migration 23): a combined
// batch writes one hold.created row per shop, covering the holds it
// created (not a checkout it skipped), and every reader sees one event per
// hold: a webhook endpoint registered while the group waits for its
// cursors starts after all of them; the feed answers each hold with its
// own consecutive cursor, checkout, lines and expiry, also for pages that
// start or end inside the group; the sequencer derives key events from the
// group's carts; the purge keeps the group until every endpoint has
// received its last cursor.
func TestCombinedEventsGrouped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := mysqltest.DB(t, 4)
	clock := pgtest.NewClock(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
	c, err := mysql.New(db.DB, holdfast.Config{Now: clock.Now, EventRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	const shop = 3
	k := holdfast.Key{ShopID: shop, ItemID: 7, LocationID: 2}
	other := holdfast.Key{ShopID: shop, ItemID: 8, LocationID: 2}
	single := holdfast.Key{ShopID: 4, ItemID: 7, LocationID: 2} // another shop's one hold in the batch
	const holds = 30
	for _, key := range []holdfast.Key{k, other, single} {
		if _, err := c.SetStrategy(ctx, key, holdfast.StrategyBatch, 0); err != nil {
			t.Fatal(err)
		}
	}
	stock := map[holdfast.Key]int{k: holds, other: 5, single: 5} // k sells out to the batch
	for key, n := range stock {
		if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: key, Set: &n, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	// A checkout that has a hold already (on another key): the batch skips
	// it, so its group must not count it.
	skipped := uuid.New()
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: skipped,
		Lines: []holdfast.Line{{ItemID: other.ItemID, LocationID: other.LocationID, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	// Sequenced before the batch: the key events derived after it come
	// from the group's carts alone.
	if _, err := c.SequenceEvents(ctx); err != nil {
		t.Fatal(err)
	}
	req := func(key holdfast.Key, id uuid.UUID, ttl time.Duration) *hfdriver.Reservation {
		lines := []holdfast.Line{{ItemID: key.ItemID, LocationID: key.LocationID, Quantity: 1}}
		raw, _ := json.Marshal(lines)
		return &hfdriver.Reservation{Shop: key.ShopID, Checkout: id, Lines: lines, LinesRaw: raw, TTL: ttl}
	}
	var reqs []*hfdriver.Reservation
	for i := range holds {
		reqs = append(reqs, req(k, uuid.New(), time.Minute+time.Duration(i)*time.Second+time.Duration(i)*time.Microsecond))
		if i == holds/2 {
			reqs = append(reqs, req(k, skipped, time.Minute), req(single, uuid.New(), time.Minute))
		}
	}
	d := mysql.DriverOf(c)
	var got []*holdfast.Hold
	for range 3 { // a deadlock or lost connection is the engine's to retry
		if got, _, err = d.CombinedAttempt(ctx, reqs, 0); err == nil || !d.Retryable(err) {
			break
		}
	}
	if err != nil || len(got) != len(reqs) {
		t.Fatalf("CombinedAttempt: %v, %v", got, err)
	}
	var want []*holdfast.Hold // shop's holds the batch created, in the batch's order
	for i, h := range got {
		switch {
		case reqs[i].Checkout == skipped:
			if h != nil {
				t.Fatalf("the batch answered the existing checkout %v", h)
			}
		case h == nil:
			t.Fatalf("request %d not granted", i)
		case h.ShopID == shop:
			want = append(want, h)
		}
	}

	type row struct {
		n       int
		grouped bool // the group's holds in grouped
		single  bool // a hold in checkout_id, cart and expires_at
	}
	rowsOf := func(shop int64) []row {
		t.Helper()
		rs, err := db.DB.QueryContext(ctx, "SELECT n, grouped IS NOT NULL, checkout_id IS NOT NULL AND cart IS NOT NULL AND expires_at IS NOT NULL FROM holdfast_events WHERE shop_id = ? AND type = 'hold.created' ORDER BY id", shop)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var out []row
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.n, &r.grouped, &r.single); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	if got := rowsOf(shop); fmt.Sprint(got) != fmt.Sprint([]row{{1, false, true}, {holds, true, false}}) {
		t.Fatalf("shop %d's hold.created rows (n, grouped, single): %v; want the plain hold's and one group of %d", shop, got, holds)
	}
	if got := rowsOf(single.ShopID); fmt.Sprint(got) != fmt.Sprint([]row{{1, false, true}}) {
		t.Fatalf("shop %d's hold.created rows (n, grouped, single): %v; want one single event", single.ShopID, got)
	}

	// Registered while the group waits for its cursors, an endpoint
	// starts after every event committed: two stock changes, the plain
	// hold (sequenced), the group.
	var pending int
	if err := db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM holdfast_events WHERE shop_id = ? AND seq IS NULL", shop).Scan(&pending); err != nil || pending != 1 {
		t.Fatalf("rows waiting for a cursor at the registration: %d, %v; want the group", pending, err)
	}
	hooks := mysqlstore.Webhooks(db.DB)
	ep, err := hooks.InsertEndpoint(ctx, shop, "https://example.com/a", "sealed", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	head := int64(3 + holds)
	if ep.Cursor != head {
		t.Fatalf("endpoint registered with the group pending starts after %d; want %d", ep.Cursor, head)
	}

	all, err := c.Events(ctx, shop, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != int(head)+1 {
		types := make([]holdfast.EventType, len(all))
		for i, e := range all {
			types[i] = e.Type
		}
		t.Fatalf("feed: %d events, want %d (and the key's sold out): %v", len(all), head+1, types)
	}
	for i, e := range all {
		if e.Cursor != int64(i+1) {
			t.Fatalf("event %d has cursor %d", i, e.Cursor)
		}
	}
	group := all[3:head]
	for i, e := range group {
		h := want[i]
		if e.Type != holdfast.EventHoldCreated || e.CheckoutID == nil || *e.CheckoutID != h.CheckoutID ||
			len(e.Lines) != 1 || e.Lines[0] != h.Lines[0] || e.ExpiresAt == nil || !e.ExpiresAt.Equal(h.ExpiresAt) ||
			!e.At.Equal(h.CreatedAt) || e.ShopID != shop {
			t.Fatalf("event at cursor %d: %+v; want hold.created of %+v", e.Cursor, e, h)
		}
	}
	if e := all[head]; e.Type != holdfast.EventKeySoldOut || e.ItemID != k.ItemID {
		t.Fatalf("after the group: %+v; want key.sold_out of the group's key (derived from its carts)", e)
	}
	if s, err := c.Events(ctx, single.ShopID, 0, 0); err != nil || len(s) != 2 || s[1].Type != holdfast.EventHoldCreated || s[1].CheckoutID == nil {
		t.Fatalf("shop %d's feed: %+v, %v", single.ShopID, s, err)
	}

	// Pages that start inside the group, and limits smaller than it.
	for _, after := range []int64{0, 3, 4, 10, head - 2, head - 1, head} {
		for _, limit := range []int{1, 2, 7, holds + 5} {
			page, err := c.Events(ctx, shop, after, limit)
			if err != nil {
				t.Fatalf("after %d limit %d: %v", after, limit, err)
			}
			wantPage := all[after:min(int(after)+limit, len(all))]
			if len(page) != len(wantPage) {
				t.Fatalf("after %d limit %d: %d events, want %d", after, limit, len(page), len(wantPage))
			}
			for i := range page {
				g, _ := json.Marshal(page[i])
				w, _ := json.Marshal(wantPage[i])
				if string(g) != string(w) {
					t.Fatalf("after %d limit %d: event %d is %s; want %s", after, limit, i, g, w)
				}
			}
		}
	}

	// The purge keeps the group while an endpoint lacks a cursor of it.
	if _, err := hooks.DeleteEndpoint(ctx, shop, ep.ID); err != nil {
		t.Fatal(err)
	}
	inside := head - 2
	ep, err = hooks.InsertEndpoint(ctx, shop, "https://example.com/b", "sealed", &inside, 10)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if _, err := c.PurgeEventsOnce(ctx); err != nil {
		t.Fatal(err)
	}
	var ce *holdfast.CursorExpiredError
	if _, err := c.Events(ctx, shop, 0, 0); !errors.As(err, &ce) || ce.Oldest != 3 {
		t.Fatalf("feed after a purge with an endpoint inside the group: %v; want the events before the group purged (oldest 3)", err)
	}
	if page, err := c.Events(ctx, shop, inside, 1); err != nil || len(page) != 1 || page[0].Cursor != inside+1 {
		t.Fatalf("after %d once purged: %+v, %v", inside, page, err)
	}
	if _, err := hooks.DeleteEndpoint(ctx, shop, ep.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.InsertEndpoint(ctx, shop, "https://example.com/c", "sealed", &head, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PurgeEventsOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Events(ctx, shop, 0, 0); !errors.As(err, &ce) || ce.Oldest != head {
		t.Fatalf("feed after a purge with the endpoint at the group's end: %v; want the group purged (oldest %d)", err, head)
	}
}
