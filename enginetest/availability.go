package enginetest

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Availability (issue #30 item 4): what a buyer could reserve now, per
// item and location in allocation order, net of holds, safety stock and
// waiters, read without locks and without writes.

func testAvailability(t *testing.T, h *Harness) {
	t.Parallel()
	t.Run("WhatReserveTakes", func(t *testing.T) { testAvailabilityReserve(t, h) })
	t.Run("BadInputReadsNothing", func(t *testing.T) { testAvailabilityBadInput(t, h) })
	t.Run("Races", func(t *testing.T) { testAvailabilityRaces(t, h) })
	t.Run("Coalesced", func(t *testing.T) { testAvailabilityCoalesced(t, h) })
	t.Run("Fresh", func(t *testing.T) { testAvailabilityFresh(t, h) })
}

// availability reads q, failing the test on an error.
func (e *env) availability(q holdfast.AvailabilityQuery) *holdfast.Availability {
	e.t.Helper()
	a, err := e.e.Availability(ctxb(), q)
	if err != nil {
		e.t.Fatalf("availability %+v: %v", q, err)
	}
	return a
}

// takesExactly checks that a reservation of exactly n units of line l (a
// fixed or allocated line; none when n is 0) succeeds and one of n+1 is
// refused as short, and releases what it held.
func (e *env) takesExactly(shop int64, l holdfast.Line, n int) {
	e.t.Helper()
	if n > 0 {
		l.Quantity = n
		id := uuid.New()
		if _, err := e.reserve(shop, id, []holdfast.Line{l}); err != nil {
			e.t.Fatalf("reserve the %d available of %+v: %v", n, l, err)
		}
		if _, err := e.e.Release(ctxb(), shop, id); err != nil {
			e.t.Fatalf("release: %v", err)
		}
	}
	l.Quantity = n + 1
	if _, err := e.reserve(shop, uuid.New(), []holdfast.Line{l}); !errors.Is(err, holdfast.ErrInsufficientStock) {
		e.t.Fatalf("reserve %d of %+v, %d available: %v, want ErrInsufficientStock", n+1, l, n, err)
	}
}

// checkAvailability checks that every number of a answers what a
// reservation could take: each location's by a fixed line, each item's
// Sellable by an allocated line with split and its Whole by one without,
// over a's locations.
func (e *env) checkAvailability(a *holdfast.Availability) {
	e.t.Helper()
	for _, it := range a.Items {
		for _, l := range it.Locations {
			e.takesExactly(a.ShopID, holdfast.Line{ItemID: it.ItemID, LocationID: l.LocationID}, l.Sellable)
		}
		e.takesExactly(a.ShopID, alloc(it.ItemID, 0, true, a.Locations...), it.Sellable)
		e.takesExactly(a.ShopID, alloc(it.ItemID, 0, false, a.Locations...), it.Whole)
	}
}

// testAvailabilityReserve: the answer is what a reservation could then
// take — with holds, safety stock, several locations in the shop's order
// or the query's, and waiters — and an item never stocked answers 0,
// not stocked; reading writes nothing.
func testAvailabilityReserve(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 40, Slots: 3}, Options{})
		ctx := ctxb()
		const shop = 1
		k := func(item, loc int64) holdfast.Key { return holdfast.Key{ShopID: shop, ItemID: item, LocationID: loc} }
		// Item 1: 5 at location 1 (2 of them held), 4 at location 2 (1 of
		// them safety stock), 0 at location 3 (stocked, sold out).
		e.stock(k(1, 1), 5)
		e.stock(k(1, 2), 4)
		e.stock(k(1, 3), 0)
		if _, err := e.e.SetSafetyStock(ctx, k(1, 2), 1); err != nil {
			t.Fatal(err)
		}
		held := e.mustReserve(shop, []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}, time.Hour)
		// Item 3: one unit, held, and a cart waiting for it.
		e.stock(k(3, 1), 1)
		holder := e.mustReserve(shop, []holdfast.Line{{ItemID: 3, LocationID: 1, Quantity: 1}}, time.Hour)
		e.mustWait(shop, uuid.New(), []holdfast.Line{{ItemID: 3, LocationID: 1, Quantity: 1}}, 10*time.Minute)
		// Item 2 was never stocked anywhere.
		if err := e.e.SetLocationOrder(ctx, shop, []int64{2, 1, 3}); err != nil {
			t.Fatal(err)
		}

		before := e.rows()
		a := e.availability(holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{1, 2, 3}})
		e.sameAllRows(before)
		want := &holdfast.Availability{ShopID: shop, Locations: []int64{2, 1, 3}, Items: []holdfast.ItemAvailability{
			{ItemID: 1, Sellable: 6, Whole: 3, Locations: []holdfast.LocationAvailability{
				{LocationID: 2, Sellable: 3}, {LocationID: 1, Sellable: 3}, {LocationID: 3, Sellable: 0}}},
			{ItemID: 2, Sellable: 0, Whole: 0, NotStocked: true, Locations: []holdfast.LocationAvailability{
				{LocationID: 2, NotStocked: true}, {LocationID: 1, NotStocked: true}, {LocationID: 3, NotStocked: true}}},
			{ItemID: 3, Sellable: 0, Whole: 0, Locations: []holdfast.LocationAvailability{
				{LocationID: 2, NotStocked: true}, {LocationID: 1, Sellable: 0, Waiters: true}, {LocationID: 3, NotStocked: true}}},
		}}
		sameAvailability(t, a, want)
		e.checkAvailability(a)

		// The query's locations, in its order, rather than the shop's.
		a = e.availability(holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{1}, Locations: []int64{3, 1}})
		sameAvailability(t, a, &holdfast.Availability{ShopID: shop, Locations: []int64{3, 1}, Items: []holdfast.ItemAvailability{
			{ItemID: 1, Sellable: 3, Whole: 3, Locations: []holdfast.LocationAvailability{{LocationID: 3}, {LocationID: 1, Sellable: 3}}}}})
		e.checkAvailability(a)

		// Units coming back go to the waiter, never to a new buyer: still
		// nothing available of item 3. Released units of item 1 are.
		if _, err := e.e.Release(ctx, shop, holder); err != nil {
			t.Fatal(err)
		}
		if _, err := e.e.Release(ctx, shop, held); err != nil {
			t.Fatal(err)
		}
		a = e.availability(holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{3, 1}, Locations: []int64{1}})
		sameAvailability(t, a, &holdfast.Availability{ShopID: shop, Locations: []int64{1}, Items: []holdfast.ItemAvailability{
			{ItemID: 3, Locations: []holdfast.LocationAvailability{{LocationID: 1, Waiters: true}}},
			{ItemID: 1, Sellable: 5, Whole: 5, Locations: []holdfast.LocationAvailability{{LocationID: 1, Sellable: 5}}}}})
		e.checkAvailability(a)
		// Safety stock raised above what is free: nothing, never below 0.
		if _, err := e.e.SetSafetyStock(ctx, k(1, 2), 9); err != nil {
			t.Fatal(err)
		}
		a = e.availability(holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{1}, Locations: []int64{2}})
		if got := a.Items[0]; got.Sellable != 0 || got.Locations[0].Sellable != 0 || got.NotStocked {
			t.Fatalf("safety stock above available: %+v", got)
		}
		e.checkAvailability(a)

		// A shop without a default order must name the locations.
		_, err := e.e.Availability(ctx, holdfast.AvailabilityQuery{ShopID: 2, Items: []int64{1}})
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != "locations" {
			t.Fatalf("no order, no locations: %v, want an *ArgumentError for locations", err)
		}
		a = e.availability(holdfast.AvailabilityQuery{ShopID: 2, Items: []int64{1}, Locations: []int64{1}})
		if it := a.Items[0]; it.Sellable != 0 || !it.NotStocked || !it.Locations[0].NotStocked {
			t.Fatalf("another shop's item: %+v", it)
		}
	})
}

// sameAvailability fails t unless got is want.
func sameAvailability(t *testing.T, got, want *holdfast.Availability) {
	t.Helper()
	ok := got.ShopID == want.ShopID && slices.Equal(got.Locations, want.Locations) &&
		slices.EqualFunc(got.Items, want.Items, func(a, b holdfast.ItemAvailability) bool {
			return a.ItemID == b.ItemID && a.Sellable == b.Sellable && a.Whole == b.Whole && a.NotStocked == b.NotStocked &&
				slices.Equal(a.Locations, b.Locations)
		})
	if !ok {
		t.Fatalf("availability\n got %+v\nwant %+v", *got, *want)
	}
}

// testAvailabilityBadInput: a malformed query is an *ArgumentError naming
// the field, and reads and writes nothing.
func testAvailabilityBadInput(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{}, Options{})
	many := make([]int64, holdfast.AvailabilityItemsMax+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	manyLocs := make([]int64, holdfast.LocationOrderMax+1)
	for i := range manyLocs {
		manyLocs[i] = int64(i + 1)
	}
	before := e.rows()
	for _, tc := range []struct {
		name  string
		q     holdfast.AvailabilityQuery
		field string
	}{
		{"no shop", holdfast.AvailabilityQuery{Items: []int64{1}, Locations: []int64{1}}, "shop_id"},
		{"no items", holdfast.AvailabilityQuery{ShopID: 1, Locations: []int64{1}}, "items"},
		{"too many items", holdfast.AvailabilityQuery{ShopID: 1, Items: many, Locations: []int64{1}}, "items"},
		{"item 0", holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{1, 0}, Locations: []int64{1}}, "items[1]"},
		{"item twice", holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{4, 5, 4}, Locations: []int64{1}}, "items[2]"},
		{"location -1", holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{1}, Locations: []int64{-1}}, "locations[0]"},
		{"location twice", holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{1}, Locations: []int64{2, 2}}, "locations[1]"},
		{"too many locations", holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{1}, Locations: manyLocs}, "locations"},
	} {
		a, err := e.e.Availability(ctxb(), tc.q)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != tc.field || a != nil {
			t.Errorf("%s: %+v %v, want an *ArgumentError for %s", tc.name, a, err, tc.field)
		}
	}
	// The largest query is answered.
	if a := e.availability(holdfast.AvailabilityQuery{ShopID: 1, Items: many[:holdfast.AvailabilityItemsMax], Locations: manyLocs[:holdfast.LocationOrderMax]}); len(a.Items) != holdfast.AvailabilityItemsMax || len(a.Items[0].Locations) != holdfast.LocationOrderMax {
		t.Fatalf("largest query: %d items, %d locations", len(a.Items), len(a.Items[0].Locations))
	}
	e.sameAllRows(before)
}

// testAvailabilityRaces: availability read while reservers run never
// exceeds what is free (available less safety stock), never goes
// negative, and — reservers only taking — never grows between two reads;
// at the end it is what is left, and what a reservation can take.
func testAvailabilityRaces(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 40, Slots: 3}, Options{Conns: 24})
		ctx := ctxb()
		const shop, item = 3, 7
		stock := map[int64]int{1: 30, 2: 20}
		const safety = 2
		for loc, n := range stock {
			k := holdfast.Key{ShopID: shop, ItemID: item, LocationID: loc}
			e.stock(k, n)
			if _, err := e.e.SetSafetyStock(ctx, k, safety); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.e.SetLocationOrder(ctx, shop, []int64{1, 2}); err != nil {
			t.Fatal(err)
		}
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		var bad errorSink
		var wg sync.WaitGroup
		var taken [3]atomic.Int64
		stop := make(chan struct{})
		const reservers = 8
		var done atomic.Int64
		for w := range reservers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if done.Add(1) == reservers {
						close(stop)
					}
				}()
				r := rand.New(rand.NewPCG(seed, uint64(w)))
				for range 12 {
					loc := int64(1 + r.IntN(2))
					q := 1 + r.IntN(3)
					_, err := e.reserve(shop, uuid.New(), []holdfast.Line{{ItemID: item, LocationID: loc, Quantity: q}})
					switch {
					case err == nil:
						taken[loc].Add(int64(q))
					case errors.Is(err, holdfast.ErrInsufficientStock):
					default:
						bad.add("reserve: %v", err)
					}
				}
			}()
		}
		reads := 0
		last := map[int64]int{1: stock[1] - safety, 2: stock[2] - safety}
	read:
		for {
			select {
			case <-stop:
				break read
			default:
			}
			a, err := e.e.Availability(ctx, holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{item}})
			if err != nil {
				bad.add("availability: %v", err)
				break
			}
			reads++
			sum := 0
			for _, l := range a.Items[0].Locations {
				if l.Sellable < 0 || l.Sellable > stock[l.LocationID]-safety {
					bad.add("read %d: location %d sellable %d, free %d", reads, l.LocationID, l.Sellable, stock[l.LocationID]-safety)
				}
				if l.Sellable > last[l.LocationID] {
					bad.add("read %d: location %d sellable grew from %d to %d while only reservations ran", reads, l.LocationID, last[l.LocationID], l.Sellable)
				}
				last[l.LocationID] = l.Sellable
				sum += l.Sellable
			}
			if a.Items[0].Sellable != sum {
				bad.add("read %d: item sellable %d, locations sum to %d", reads, a.Items[0].Sellable, sum)
			}
		}
		wg.Wait()
		bad.check(t)
		if reads == 0 {
			t.Fatal("no availability read ran while the reservers did")
		}
		a := e.availability(holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{item}})
		for _, l := range a.Items[0].Locations {
			if want := stock[l.LocationID] - safety - int(taken[l.LocationID].Load()); l.Sellable != want {
				t.Fatalf("after the reservers: location %d sellable %d, want %d (seed %d)", l.LocationID, l.Sellable, want, seed)
			}
		}
		e.checkAvailability(a)
		t.Logf("%d availability reads during the reservations", reads)
	})
}
