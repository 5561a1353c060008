package enginetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// testEventsGrouped (#29 item 2): the holds a combined batch creates are
// one event row on the engines that group them, and the feed still gives
// one hold.created per hold, each with its own cursor, its checkout, lines
// and expiry — whatever page size reads it and whichever cursor a page
// starts after, inside a group or at its edge.
func testEventsGrouped(t *testing.T, h *Harness) {
	t.Parallel()
	if len(h.Combining) == 0 {
		t.Skip("the engine does not combine reservations")
	}
	for _, s := range h.Combining {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{Conns: 40})
			k := key(1, 6)
			const holders = 80
			e.stock(k, holders)
			if _, err := e.e.Events(ctxb(), 1, 0, 0); err != nil { // the stock change sequenced: what follows is the holds alone
				t.Fatal(err)
			}
			ttls := []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}
			holds := map[uuid.UUID]*holdfast.Hold{}
			var mu sync.Mutex
			var bad errorSink
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range holders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					id := uuid.New()
					got, err := e.e.Reserve(ctxb(), holdfast.ReserveParams{
						ShopID: 1, CheckoutID: id, Lines: one(6, 1), TTL: ttls[i%len(ttls)]})
					if err != nil {
						bad.add("reserve: %v", err)
						return
					}
					mu.Lock()
					holds[id] = got
					mu.Unlock()
				}()
			}
			close(start)
			wg.Wait()
			bad.check(t)

			// Every page size reads the same feed: cursors 1, 2, 3, …
			all := e.eventsBy(1, 0, holdfast.EventsLimitMax)
			for _, limit := range []int{1, 2, 3, 7, 64} {
				if got := e.eventsBy(1, 0, limit); fmt.Sprint(eventKeys(got)) != fmt.Sprint(eventKeys(all)) {
					t.Fatalf("pages of %d read\n  %v\npages of %d read\n  %v", limit, eventKeys(got), holdfast.EventsLimitMax, eventKeys(all))
				}
			}
			created := 0
			for i, ev := range all {
				if ev.Cursor != int64(i)+1 {
					t.Fatalf("event %d has cursor %d, want %d", i, ev.Cursor, i+1)
				}
				if ev.Type != holdfast.EventHoldCreated {
					continue
				}
				created++
				if ev.CheckoutID == nil {
					t.Fatalf("hold.created %d names no checkout", ev.Cursor)
				}
				hd, ok := holds[*ev.CheckoutID]
				if !ok {
					t.Fatalf("hold.created %d names %s, which no reservation answered", ev.Cursor, ev.CheckoutID)
				}
				delete(holds, *ev.CheckoutID)
				if len(ev.Lines) != 1 || ev.Lines[0] != (holdfast.Line{ItemID: 6, LocationID: k.LocationID, Quantity: 1}) {
					t.Fatalf("hold.created %d has lines %+v", ev.Cursor, ev.Lines)
				}
				if ev.ExpiresAt == nil || !ev.ExpiresAt.Equal(hd.ExpiresAt) {
					t.Fatalf("hold.created %d expires at %v, its hold at %v", ev.Cursor, ev.ExpiresAt, hd.ExpiresAt)
				}
				if ev.At.IsZero() || ev.At.After(hd.ExpiresAt) {
					t.Fatalf("hold.created %d at %v (hold expires %v)", ev.Cursor, ev.At, hd.ExpiresAt)
				}
			}
			if created != holders || len(holds) != 0 {
				t.Fatalf("%d hold.created events for %d holds; %d holds without one", created, holders, len(holds))
			}
			// Every unit held: the key is sold out, derived from the
			// holds' lines alone (the stock change was sequenced before).
			if last := all[len(all)-1]; last.Type != holdfast.EventKeySoldOut || last.ItemID != 6 {
				t.Fatalf("the feed ends with %s, want the key's key.sold_out", describe(last, nil))
			}

			// A page after any cursor — inside a group, at its edge — is
			// the feed's next events from there.
			for after := 0; after <= len(all); after++ {
				page, err := e.e.Events(ctxb(), 1, int64(after), 5)
				if err != nil {
					t.Fatalf("events after %d: %v", after, err)
				}
				want := all[after:min(after+5, len(all))]
				if fmt.Sprint(eventKeys(page)) != fmt.Sprint(eventKeys(want)) {
					t.Fatalf("events after %d: %v, want %v", after, eventKeys(page), eventKeys(want))
				}
			}

			if e.EventRows != nil {
				rows, err := e.EventRows(ctxb(), 1)
				if err != nil {
					t.Fatal(err)
				}
				if rows >= len(all) {
					t.Fatalf("the combined holds' events were not grouped: %d rows for %d events", rows, len(all))
				}
				t.Logf("%d events in %d rows", len(all), rows)
			}
		})
	}
}

// eventsBy reads every event of shop after the cursor in pages of limit.
func (e *env) eventsBy(shop, after int64, limit int) []holdfast.Event {
	e.t.Helper()
	var out []holdfast.Event
	for {
		page, err := e.e.Events(ctxb(), shop, after, limit)
		if err != nil {
			e.t.Fatalf("events of shop %d after %d (limit %d): %v", shop, after, limit, err)
		}
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
		after = page[len(page)-1].Cursor
	}
}

// eventKeys is what identifies each event: its cursor, type and checkout.
func eventKeys(evs []holdfast.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = fmt.Sprintf("%d %s", ev.Cursor, ev.Type)
		if ev.CheckoutID != nil {
			out[i] += " " + ev.CheckoutID.String()
		}
	}
	return out
}

// ReserveConcurrently reserves n one-unit holds of k at once, each under a
// checkout of its own, and fails t on any error: under a combining
// strategy they are combined into batches. For the drivers' own tests of
// grouped events (their migrations, webhooks).
func ReserveConcurrently(t testing.TB, e holdfast.Engine, k holdfast.Key, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: k.ShopID, CheckoutID: uuid.New(),
				Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}})
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("reserve of %+v: %v", k, err)
		}
	}
}

// FeedHoldsCreated reads shop's whole feed, fails t unless its cursors run
// 1, 2, 3, … without a gap, and returns how many hold.created it has.
func FeedHoldsCreated(t testing.TB, e holdfast.Engine, shop int64) int {
	t.Helper()
	created := 0
	var after int64
	for {
		page, err := e.Events(ctxb(), shop, after, holdfast.EventsLimitMax)
		if err != nil {
			t.Fatalf("events of shop %d after %d: %v", shop, after, err)
		}
		for _, ev := range page {
			if ev.Cursor != after+1 {
				t.Fatalf("event after cursor %d has cursor %d", after, ev.Cursor)
			}
			after = ev.Cursor
			if ev.Type == holdfast.EventHoldCreated {
				created++
			}
		}
		if len(page) < holdfast.EventsLimitMax {
			return created
		}
	}
}
