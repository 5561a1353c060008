package enginetest

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// alloc is an allocated line of item: quantity q from candidates, in
// priority order.
func alloc(item int64, q int, split bool, candidates ...int64) holdfast.Line {
	return holdfast.Line{ItemID: item, Quantity: q, Candidates: holdfast.LocationsOf(candidates...), Split: split}
}

// testAllocation: a line without a location is taken from the first
// candidate that can supply it, or split across candidates when allowed, or
// from the shop's default order; a line no candidate can supply is short by
// item, with nothing written; the resolved per-location lines are claimed,
// released and expired per location; a retry is a replay; bad allocation
// input is an *ArgumentError naming the field, with nothing written.
func testAllocation(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 40, Slots: 3}, Options{})
		ctx := ctxb()
		const shop = 1
		stock := map[int64]int{1: 2, 2: 10, 3: 10}
		for loc, n := range stock {
			e.stock(holdfast.Key{ShopID: shop, ItemID: 1, LocationID: loc}, n)
		}
		e.stock(key(shop, 2), 5)
		k := func(loc int64) holdfast.Key { return holdfast.Key{ShopID: shop, ItemID: 1, LocationID: loc} }
		held := func(want map[int64]int) {
			t.Helper()
			for loc := int64(1); loc <= 3; loc++ {
				if l := e.level(k(loc)); l.Held != want[loc] {
					t.Fatalf("location %d: %+v, want %d held", loc, l, want[loc])
				}
			}
		}
		expect := func(h *holdfast.Hold, want ...holdfast.Line) {
			t.Helper()
			if !slices.Equal(h.Lines, want) {
				t.Fatalf("hold lines %+v, want %+v", h.Lines, want)
			}
		}
		reserve := func(lines ...holdfast.Line) *holdfast.Hold {
			t.Helper()
			h, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: lines, TTL: time.Minute})
			if err != nil {
				t.Fatalf("reserve %+v: %v", lines, err)
			}
			if h.Status != holdfast.StatusHeld {
				t.Fatalf("reserve answered %+v", h)
			}
			return h
		}

		// First candidate that can: location 1 has 2 of 5, so location 2.
		a := reserve(alloc(1, 5, false, 1, 2, 3))
		expect(a, holdfast.Line{ItemID: 1, LocationID: 2, Quantity: 5})
		// The priority order decides, not the key order.
		b := reserve(alloc(1, 5, false, 3, 2, 1))
		expect(b, holdfast.Line{ItemID: 1, LocationID: 3, Quantity: 5})
		// Location 1 can supply 2: it is first.
		c := reserve(alloc(1, 2, false, 1, 2, 3))
		expect(c, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 2})
		held(map[int64]int{1: 2, 2: 5, 3: 5})
		if got := e.hold(shop, a.CheckoutID); !slices.Equal(got.Lines, a.Lines) {
			t.Fatalf("read back %+v, reserved %+v", got.Lines, a.Lines)
		}
		for _, id := range []uuid.UUID{b.CheckoutID, c.CheckoutID} {
			if _, err := e.e.Release(ctx, shop, id); err != nil {
				t.Fatal(err)
			}
		}
		held(map[int64]int{2: 5})

		// A retry is a replay; the same checkout with another cart is a
		// conflict.
		p := holdfast.ReserveParams{ShopID: shop, CheckoutID: a.CheckoutID, Lines: []holdfast.Line{alloc(1, 5, false, 1, 2, 3)}, TTL: time.Minute}
		if r, err := e.e.Reserve(ctx, p); err != nil || !r.Replayed || !slices.Equal(r.Lines, a.Lines) {
			t.Fatalf("retry: %+v %v", r, err)
		}
		p.Lines = []holdfast.Line{alloc(1, 4, false, 1, 2, 3)}
		if _, err := e.e.Reserve(ctx, p); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("other cart under the same checkout: %v", err)
		}
		if _, err := e.e.Release(ctx, shop, a.CheckoutID); err != nil {
			t.Fatal(err)
		}
		held(nil)

		// Split: 15 is at no single location (2, 10, 10): taken in priority
		// order, the first candidates emptied first.
		sp := reserve(alloc(1, 15, true, 1, 2, 3))
		expect(sp, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 2}, holdfast.Line{ItemID: 1, LocationID: 2, Quantity: 10}, holdfast.Line{ItemID: 1, LocationID: 3, Quantity: 3})
		held(map[int64]int{1: 2, 2: 10, 3: 3})
		// A whole candidate is still preferred to a split.
		w := reserve(alloc(1, 7, true, 1, 3))
		expect(w, holdfast.Line{ItemID: 1, LocationID: 3, Quantity: 7})
		// Claims deduct per location.
		if _, err := e.e.Claim(ctx, shop, sp.CheckoutID); err != nil {
			t.Fatal(err)
		}
		for loc, want := range map[int64]int{1: 0, 2: 0, 3: 7} {
			if l := e.level(k(loc)); l.Available != want {
				t.Fatalf("after the claim, location %d: %+v, want available %d", loc, l, want)
			}
		}
		// Expiry gives the units back per location.
		if n := e.sweep(2 * time.Minute); n != 1 {
			t.Fatalf("sweep expired %d holds, want 1", n)
		}
		held(nil)
		for loc, n := range stock {
			e.stock(k(loc), n)
		}

		// Short across every candidate: named by item (location 0) with the
		// total sellable; without split, the best single location's stock.
		before := e.rows()
		for _, tc := range []struct {
			line     holdfast.Line
			sellable int
		}{
			{alloc(1, 23, true, 1, 2, 3), 22},
			{alloc(1, 11, false, 1, 2, 3), 10},
			{alloc(1, 3, true, 1, 4), 2},
		} {
			id := uuid.New()
			_, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: []holdfast.Line{holdfast.Line{ItemID: 2, LocationID: 1, Quantity: 1}, tc.line}})
			var ise *holdfast.InsufficientStockError
			if !errors.As(err, &ise) {
				t.Fatalf("%+v: %v, want insufficient stock", tc.line, err)
			}
			want := []holdfast.Shortfall{{ItemID: 1, LocationID: 0, Requested: tc.line.Quantity, Sellable: tc.sellable}}
			if !slices.Equal(ise.Lines, want) {
				t.Fatalf("%+v: shortfalls %+v, want %+v", tc.line, ise.Lines, want)
			}
			if _, err := e.e.Hold(ctx, shop, id); !errors.Is(err, holdfast.ErrNotFound) {
				t.Fatalf("a short cart left a hold: %v", err)
			}
		}
		e.sameAllRows(before)
		held(nil)
		if l := e.level(key(shop, 2)); l.Held != 0 {
			t.Fatalf("the short carts' fixed line left units held: %+v", l)
		}

		// The shop's default order, for lines without candidates; a fixed
		// line in the same cart keeps its location.
		if got, err := e.e.LocationOrder(ctx, shop); err != nil || len(got) != 0 {
			t.Fatalf("default order before any: %v %v", got, err)
		}
		if err := e.e.SetLocationOrder(ctx, shop, []int64{3, 1}); err != nil {
			t.Fatal(err)
		}
		if got, err := e.e.LocationOrder(ctx, shop); err != nil || !slices.Equal(got, []int64{3, 1}) {
			t.Fatalf("default order: %v %v", got, err)
		}
		d := reserve(holdfast.Line{ItemID: 2, LocationID: 1, Quantity: 2}, alloc(1, 4, false))
		expect(d, holdfast.Line{ItemID: 1, LocationID: 3, Quantity: 4}, holdfast.Line{ItemID: 2, LocationID: 1, Quantity: 2})
		if r, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: d.CheckoutID, Lines: []holdfast.Line{alloc(1, 4, false), {ItemID: 2, LocationID: 1, Quantity: 2}}, TTL: time.Minute}); err != nil || !r.Replayed {
			t.Fatalf("retry under the default order: %+v %v", r, err)
		}
		// Another shop has its own order (none).
		if got, err := e.e.LocationOrder(ctx, shop+1); err != nil || len(got) != 0 {
			t.Fatalf("other shop's order: %v %v", got, err)
		}
		if _, err := e.e.Release(ctx, shop, d.CheckoutID); err != nil {
			t.Fatal(err)
		}
		if err := e.e.SetLocationOrder(ctx, shop, nil); err != nil {
			t.Fatal(err)
		}
		if got, err := e.e.LocationOrder(ctx, shop); err != nil || len(got) != 0 {
			t.Fatalf("cleared order: %v %v", got, err)
		}

		// Bad input: an *ArgumentError naming the field, nothing written.
		before = e.rows()
		nine := make([]int64, holdfast.CandidatesPerLineMax+1)
		for i := range nine {
			nine[i] = int64(i + 1)
		}
		for _, tc := range []struct {
			lines []holdfast.Line
			field string
		}{
			{[]holdfast.Line{{ItemID: 1, LocationID: 2, Quantity: 1, Candidates: holdfast.LocationsOf(1)}}, "lines[0].candidates"},
			{[]holdfast.Line{{ItemID: 1, LocationID: 2, Quantity: 1, Split: true}}, "lines[0].split"},
			{[]holdfast.Line{alloc(1, 1, false, nine...)}, "lines[0].candidates"},
			{[]holdfast.Line{alloc(1, 1, false, 1, 2, 1)}, "lines[0].candidates[2]"},
			{[]holdfast.Line{alloc(1, 1, false, 1, 0)}, "lines[0].candidates[1]"},
			{[]holdfast.Line{alloc(1, 1, false, 1, -3)}, "lines[0].candidates[1]"},
			{[]holdfast.Line{{ItemID: 2, LocationID: 1, Quantity: 1}, alloc(2, 1, false, 1, 2)}, "lines[1]"},
			{[]holdfast.Line{alloc(1, 1, false, 1), alloc(1, 1, true, 2)}, "lines[1]"},
			{[]holdfast.Line{{ItemID: 1, LocationID: -1, Quantity: 1}}, "lines[0].location_id"},
			{[]holdfast.Line{{ItemID: 2, LocationID: 1, Quantity: 1}, alloc(1, 1, false)}, "lines[1].location_id"}, // no order set
		} {
			id := uuid.New()
			_, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: tc.lines})
			var ae *holdfast.ArgumentError
			if !errors.As(err, &ae) || ae.Field != tc.field {
				t.Fatalf("%+v: %v, want an argument error on %s", tc.lines, err, tc.field)
			}
		}
		for _, tc := range []struct {
			shop  int64
			locs  []int64
			field string
		}{
			{0, []int64{1}, "shop_id"},
			{shop, []int64{1, 2, 1}, "locations[2]"},
			{shop, []int64{0}, "locations[0]"},
			{shop, make([]int64, holdfast.LocationOrderMax+1), "locations"},
		} {
			err := e.e.SetLocationOrder(ctx, tc.shop, tc.locs)
			var ae *holdfast.ArgumentError
			if !errors.As(err, &ae) || ae.Field != tc.field {
				t.Fatalf("SetLocationOrder(%d, %v): %v, want an argument error on %s", tc.shop, tc.locs, err, tc.field)
			}
		}
		e.sameAllRows(before)
		if got, err := e.e.LocationOrder(ctx, shop); err != nil || len(got) != 0 {
			t.Fatalf("rejected orders wrote %v %v", got, err)
		}
		held(nil)
	})
}

// testAllocationRaces: carts allocating the same items over the same
// locations in opposite priority orders, some split, race; no deadlock (or
// any error but sold out) reaches a caller, every held cart is allocated
// as asked, and per location what is held is exactly the kept carts' lines,
// never above stock (the invariant per location, checked at the end).
func testAllocationRaces(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 15, Slots: 3}, Options{Conns: 24})
		ctx := ctxb()
		const shop, perKey = 1, 12
		items, locs := []int64{1, 2}, []int64{1, 2, 3}
		for _, it := range items {
			for _, loc := range locs {
				e.stock(holdfast.Key{ShopID: shop, ItemID: it, LocationID: loc}, perKey)
			}
		}
		clients, carts := 8, 10
		if long() {
			clients, carts = 16, 40
		}
		var wg sync.WaitGroup
		var ok, sold atomic.Int64
		var bad errorSink
		var mu sync.Mutex
		kept := map[uuid.UUID][]holdfast.Line{}
		for g := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 16))
				for range carts {
					order := []int64{1, 2, 3}
					if g%2 == 1 {
						order = []int64{3, 2, 1}
					}
					var lines []holdfast.Line
					for _, it := range items {
						lines = append(lines, alloc(it, 1+r.IntN(5), r.IntN(2) == 0, order...))
					}
					id := uuid.New()
					hd, err := e.reserve(shop, id, lines)
					switch {
					case err == nil:
						ok.Add(1)
						if !holdfast.AllocationSatisfied(hd.Lines, lines) {
							bad.add("cart %+v held as %+v", lines, hd.Lines)
						}
						if r.IntN(3) == 0 {
							if _, err := e.e.Release(ctx, shop, id); err != nil {
								bad.add("release: %v", err)
							}
						} else {
							mu.Lock()
							kept[id] = hd.Lines
							mu.Unlock()
						}
					case errors.Is(err, holdfast.ErrInsufficientStock):
						sold.Add(1)
					default:
						bad.add("cart %+v: %v", lines, err)
					}
				}
			}()
		}
		wg.Wait()
		bad.check(t)
		if ok.Load() == 0 {
			t.Fatal("no cart was held")
		}
		want := map[holdfast.Key]int{}
		for id, lines := range kept {
			if got := e.hold(shop, id); !slices.Equal(got.Lines, lines) {
				t.Fatalf("hold %s reads %+v, was held as %+v", id, got.Lines, lines)
			}
			for _, l := range lines {
				want[holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}] += l.Quantity
			}
		}
		for _, it := range items {
			for _, loc := range locs {
				k := holdfast.Key{ShopID: shop, ItemID: it, LocationID: loc}
				if l := e.level(k); l.Held != want[k] || l.Available != perKey || l.Held > l.Available {
					t.Fatalf("%+v: %+v, want %d held by the kept carts", k, l, want[k])
				}
			}
		}
		t.Logf("%d carts held, %d sold out, %d keys held", ok.Load(), sold.Load(), len(slices.Collect(maps.Keys(want))))
	})
}

// rows counts the engine's rows per table (nil without Harness Rows).
func (e *env) rows() map[string]int {
	e.t.Helper()
	if e.Rows == nil {
		return nil
	}
	rows, err := e.Rows(ctxb())
	if err != nil {
		e.t.Fatalf("row counts: %v", err)
	}
	return rows
}

// sameAllRows fails unless the engine's rows per table are as before.
func (e *env) sameAllRows(before map[string]int) {
	e.t.Helper()
	if after := e.rows(); !maps.Equal(before, after) {
		e.t.Fatalf("rows changed: %v, then %v", before, after)
	}
}
