package enginetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// events reads every event of shop after the cursor, page by page.
func (e *env) events(shop, after int64) []holdfast.Event {
	e.t.Helper()
	var out []holdfast.Event
	for {
		page, err := e.e.Events(ctxb(), shop, after, 3)
		if err != nil {
			e.t.Fatalf("events of shop %d after %d: %v", shop, after, err)
		}
		out = append(out, page...)
		if len(page) < 3 {
			return out
		}
		after = page[len(page)-1].Cursor
	}
}

// describe is an event in a form a test compares: type, checkout (by name)
// and the fields of its type.
func describe(ev holdfast.Event, names map[uuid.UUID]string) string {
	s := string(ev.Type)
	if ev.CheckoutID != nil {
		s += " " + names[*ev.CheckoutID]
		for _, l := range ev.Lines {
			s += fmt.Sprintf(" %d@%d×%d", l.ItemID, l.LocationID, l.Quantity)
		}
	}
	if ev.ItemID != 0 {
		s += fmt.Sprintf(" key %d/%d", ev.ItemID, ev.LocationID)
	}
	if ev.Delta != nil {
		s += fmt.Sprintf(" delta %d", *ev.Delta)
	}
	if ev.Available != nil {
		s += fmt.Sprintf(" available %d", *ev.Available)
	}
	return s
}

// testEvents (#17): every state change has its event, in the order of the
// changes, with per-shop cursors 1, 2, 3, …; rejected calls write none;
// claims are hold events, not stock events; sold out and back in stock are
// derived from the key's level.
func testEvents(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{})
		ctx := ctxb()
		k := key(1, 1)
		names := map[uuid.UUID]string{}
		var cursor int64
		expect := func(step string, want ...string) {
			t.Helper()
			got := e.events(1, cursor)
			var gs []string
			for i, ev := range got {
				if ev.Cursor != cursor+int64(i)+1 || ev.ShopID != 1 {
					t.Fatalf("%s: event %d has cursor %d shop %d, want cursor %d shop 1", step, i, ev.Cursor, ev.ShopID, cursor+int64(i)+1)
				}
				if ev.At.IsZero() {
					t.Fatalf("%s: event %+v has no time", step, ev)
				}
				gs = append(gs, describe(ev, names))
			}
			if strings.Join(gs, "; ") != strings.Join(want, "; ") {
				t.Fatalf("%s: events\n  %s\nwant\n  %s", step, strings.Join(gs, "; "), strings.Join(want, "; "))
			}
			if len(got) > 0 {
				cursor = got[len(got)-1].Cursor
			}
		}
		reserve := func(name string, q int, ttl time.Duration) uuid.UUID {
			t.Helper()
			id := e.mustReserve(1, one(1, q), ttl)
			names[id] = name
			return id
		}

		expect("empty feed")
		e.stock(k, 3)
		expect("stock set", "stock.changed key 1/1 delta 3 available 3")
		a := reserve("A", 2, 0)
		expect("reserve A", "hold.created A 1@1×2")
		b := reserve("B", 1, 0)
		expect("reserve B sells out", "hold.created B 1@1×1", "key.sold_out key 1/1 available 3")
		if _, err := e.reserve(1, uuid.New(), one(1, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("reserve on a sold-out key: %v", err)
		}
		expect("a refused reservation writes no event")
		if _, err := e.e.Extend(ctx, 1, a, 20*time.Minute); err != nil {
			t.Fatal(err)
		}
		expect("extend A", "hold.extended A 1@1×2")
		if _, err := e.e.Release(ctx, 1, b); err != nil {
			t.Fatal(err)
		}
		expect("release B", "hold.released B 1@1×1", "key.back_in_stock key 1/1 available 3")
		if _, err := e.e.Release(ctx, 1, b); err != nil {
			t.Fatal(err)
		}
		expect("a replayed release writes no event")
		if _, err := e.e.Claim(ctx, 1, a); err != nil {
			t.Fatal(err)
		}
		expect("claim A (no stock event for the deduction)", "hold.claimed A 1@1×2")
		c := reserve("C", 1, time.Minute)
		expect("reserve C", "hold.created C 1@1×1", "key.sold_out key 1/1 available 1")
		if n := e.sweep(2 * time.Minute); n != 1 {
			t.Fatalf("sweep expired %d, want 1", n)
		}
		expect("C expires", "hold.expired C 1@1×1", "key.back_in_stock key 1/1 available 1")
		if _, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 5, Reason: "restock", Reference: "po-7"}); err != nil {
			t.Fatal(err)
		}
		expect("adjust", "stock.changed key 1/1 delta 5 available 6")
		evs := e.events(1, cursor-1)
		if len(evs) != 1 || evs[0].Reason != "restock" || evs[0].Reference != "po-7" || evs[0].CheckoutID != nil {
			t.Fatalf("stock event %+v, want reason and reference", evs)
		}
		_ = c

		// Another shop has its own feed and cursors.
		e.stock(key(2, 1), 1)
		d := e.mustReserve(2, one(1, 1), 0)
		got := e.events(2, 0)
		if len(got) != 3 || got[0].Cursor != 1 || got[1].Type != holdfast.EventHoldCreated || *got[1].CheckoutID != d || got[2].Type != holdfast.EventKeySoldOut {
			t.Fatalf("shop 2's feed: %+v", got)
		}
		expect("shop 1 sees nothing of shop 2")
	})
}

// testEventsBadArguments: Events refuses bad arguments with an
// *ArgumentError naming the field.
func testEventsBadArguments(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	for _, tc := range []struct {
		shop, after int64
		limit       int
		field       string
	}{
		{0, 0, 10, "shop_id"},
		{-1, 0, 10, "shop_id"},
		{1, -1, 10, "after"},
		{1, 0, -1, "limit"},
		{1, 0, holdfast.EventsLimitMax + 1, "limit"},
	} {
		_, err := e.e.Events(ctxb(), tc.shop, tc.after, tc.limit)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("Events(%d, %d, %d): %v, want an *ArgumentError for %s", tc.shop, tc.after, tc.limit, err, tc.field)
		}
	}
	if got, err := e.e.Events(ctxb(), 1, 0, 0); err != nil || len(got) != 0 {
		t.Fatalf("Events with limit 0 (the default) on an empty feed: %v, %v", got, err)
	}
}

// testEventsConcurrentPaging (#17): a reader paging the feed while writers
// reserve and release concurrently sees every event exactly once, with
// contiguous cursors, each checkout's created before its released.
func testEventsConcurrentPaging(t *testing.T, h *Harness) {
	t.Parallel()
	writers, each := 8, 15
	if long() {
		writers, each = 16, 100
	}
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: writers + 4})
	for item := int64(1); item <= 4; item++ {
		e.stock(key(1, item), 1_000_000)
	}
	base := e.events(1, 0)
	after := base[len(base)-1].Cursor

	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := uuid.New()
				item := int64(1 + (w+i)%4)
				if _, err := e.reserve(1, id, one(item, 1)); err != nil {
					errs <- err
					return
				}
				if _, err := e.e.Release(ctxb(), 1, id); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	go func() { wg.Wait(); close(done) }()

	var seen []holdfast.Event
	cursor := after
	read := func() int {
		page, err := e.e.Events(ctxb(), 1, cursor, 7)
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		seen = append(seen, page...)
		if len(page) > 0 {
			cursor = page[len(page)-1].Cursor
		}
		return len(page)
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			read()
		}
	}
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	for read() > 0 {
	}

	state := map[uuid.UUID]holdfast.EventType{}
	for i, ev := range seen {
		if ev.Cursor != after+int64(i)+1 {
			t.Fatalf("event %d has cursor %d, want %d (a gap or a repeat)", i, ev.Cursor, after+int64(i)+1)
		}
		if ev.CheckoutID == nil {
			continue
		}
		switch prev := state[*ev.CheckoutID]; {
		case ev.Type == holdfast.EventHoldCreated && prev == "":
		case ev.Type == holdfast.EventHoldReleased && prev == holdfast.EventHoldCreated:
		default:
			t.Fatalf("checkout %s: %s after %q", *ev.CheckoutID, ev.Type, prev)
		}
		state[*ev.CheckoutID] = ev.Type
	}
	if len(state) != writers*each {
		t.Fatalf("%d checkouts in the feed, want %d", len(state), writers*each)
	}
	for id, st := range state {
		if st != holdfast.EventHoldReleased {
			t.Fatalf("checkout %s ends at %s in the feed, want released", id, st)
		}
	}
}
