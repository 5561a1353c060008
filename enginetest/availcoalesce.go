package enginetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// availabilityReads is what an engine that coalesces availability reads
// reports (engine.Client.AvailabilityReads): queries answered and reads
// run for them.
type availabilityReads interface {
	AvailabilityReads() (queries, reads int64)
}

// testAvailabilityCoalesced: concurrent availability queries of one shop
// — different items, the shop's order or named locations — answer each
// exactly what the same query answers alone; and, on an engine that says
// how many reads it ran, they shared reads.
func testAvailabilityCoalesced(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{PoolCap: 40, Slots: 3}, Options{Conns: 24})
	const shop = 5
	for item := int64(1); item <= 6; item++ {
		for loc := int64(1); loc <= 3; loc++ {
			if (item+loc)%4 == 0 {
				continue // some keys never stocked
			}
			e.stock(holdfast.Key{ShopID: shop, ItemID: item, LocationID: loc}, int(10*item+loc))
		}
	}
	e.mustReserve(shop, []holdfast.Line{{ItemID: 2, LocationID: 1, Quantity: 3}, {ItemID: 5, LocationID: 2, Quantity: 4}}, time.Hour)
	if err := e.e.SetLocationOrder(ctxb(), shop, []int64{3, 1, 2}); err != nil {
		t.Fatal(err)
	}
	queries := []holdfast.AvailabilityQuery{
		{ShopID: shop, Items: []int64{1}},
		{ShopID: shop, Items: []int64{2, 5}},
		{ShopID: shop, Items: []int64{6, 4, 2}},
		{ShopID: shop, Items: []int64{5}, Locations: []int64{2}},
		{ShopID: shop, Items: []int64{3, 1}, Locations: []int64{2}},
		{ShopID: shop, Items: []int64{2, 3, 4, 5, 6, 1}, Locations: []int64{1, 2}},
		{ShopID: shop, Items: []int64{4}, Locations: []int64{1, 2}},
	}
	want := make([]*holdfast.Availability, len(queries))
	for i, q := range queries {
		want[i] = e.availability(q)
	}
	var q0, r0 int64
	counter, counts := e.e.(availabilityReads)
	if counts {
		q0, r0 = counter.AvailabilityReads()
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	const readers, rounds = 16, 40
	var bad errorSink
	var wg sync.WaitGroup
	for w := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for range rounds {
				i := r.IntN(len(queries))
				a, err := e.e.Availability(ctxb(), queries[i])
				if err != nil {
					bad.add("query %d: %v", i, err)
					return
				}
				if d := availabilityDiff(a, want[i]); d != "" {
					bad.add("query %d %+v concurrently: %s", i, queries[i], d)
				}
			}
		}()
	}
	wg.Wait()
	bad.check(t)
	if counts {
		q1, r1 := counter.AvailabilityReads()
		q, r := q1-q0, r1-r0
		t.Logf("%d queries answered by %d reads", q, r)
		if q != readers*rounds {
			t.Fatalf("%d queries counted, want %d", q, readers*rounds)
		}
		if r >= q {
			t.Fatalf("%d concurrent queries ran %d reads: none shared", q, r)
		}
	}
}

// testAvailabilityFresh: a query made after a reservation returned sees
// it, even while other readers of the same key keep reads in flight (a
// query never takes the answer of a read that began before it); those
// readers never see more than is free nor less than 0, nor sellable
// growing while only reservations run.
func testAvailabilityFresh(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 40, Slots: 3}, Options{Conns: 24})
		const shop, item, loc, stock, safety = 6, 9, 1, 30, 2
		k := holdfast.Key{ShopID: shop, ItemID: item, LocationID: loc}
		e.stock(k, stock)
		if _, err := e.e.SetSafetyStock(ctxb(), k, safety); err != nil {
			t.Fatal(err)
		}
		q := holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{item}, Locations: []int64{loc}}
		var bad errorSink
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				last := stock - safety
				for {
					select {
					case <-stop:
						return
					default:
					}
					a, err := e.e.Availability(ctxb(), q)
					if err != nil {
						bad.add("reader: %v", err)
						return
					}
					got := a.Items[0].Sellable
					if got < 0 || got > last {
						bad.add("reader: sellable %d after %d (free %d)", got, last, stock-safety)
					}
					last = got
				}
			}()
		}
		for n := 1; n <= stock-safety; n++ {
			if _, err := e.reserve(shop, uuid.New(), []holdfast.Line{{ItemID: item, LocationID: loc, Quantity: 1}}); err != nil {
				close(stop)
				wg.Wait()
				t.Fatalf("reserve unit %d: %v", n, err)
			}
			a := e.availability(q)
			if got, want := a.Items[0].Sellable, stock-safety-n; got != want {
				bad.add("after reservation %d returned: sellable %d, want %d", n, got, want)
			}
		}
		close(stop)
		wg.Wait()
		bad.check(t)
		e.takesExactly(shop, holdfast.Line{ItemID: item, LocationID: loc}, 0)
	})
}

// availabilityDiff is "" when got is want, else what differs.
func availabilityDiff(got, want *holdfast.Availability) string {
	ok := got.ShopID == want.ShopID && slices.Equal(got.Locations, want.Locations) &&
		slices.EqualFunc(got.Items, want.Items, func(a, b holdfast.ItemAvailability) bool {
			return a.ItemID == b.ItemID && a.Sellable == b.Sellable && a.Whole == b.Whole && a.NotStocked == b.NotStocked &&
				slices.Equal(a.Locations, b.Locations)
		})
	if ok {
		return ""
	}
	return fmt.Sprintf("got %+v, want %+v", *got, *want)
}
