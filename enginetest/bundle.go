package enginetest

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Bundles (issue #30 item 1): a bundle item stands for components ×
// quantities; reserving it reserves every component, all or nothing, and
// the hold's lines are the components.

func testBundles(t *testing.T, h *Harness) {
	t.Parallel()
	t.Run("ReserveTakesComponents", func(t *testing.T) { testBundleReserve(t, h) })
	t.Run("AllOrNothing", func(t *testing.T) { testBundleAllOrNothing(t, h) })
	t.Run("BuyerLimitPerComponent", func(t *testing.T) { testBundleBuyerLimit(t, h) })
	t.Run("BadDefinitionsChangeNothing", func(t *testing.T) { testBundleBadDefinitions(t, h) })
	t.Run("RaceWithComponentBuyers", func(t *testing.T) { testBundleRace(t, h) })
}

// setBundle defines bundle item as comps (item, quantity pairs).
func (e *env) setBundle(shop, item int64, comps ...int64) holdfast.Bundle {
	e.t.Helper()
	b := holdfast.Bundle{ShopID: shop, ItemID: item}
	for i := 0; i+1 < len(comps); i += 2 {
		b.Components = append(b.Components, holdfast.BundleComponent{ItemID: comps[i], Quantity: int(comps[i+1])})
	}
	if err := e.e.SetBundle(ctxb(), b); err != nil {
		e.t.Fatalf("set bundle %+v: %v", b, err)
	}
	return b
}

// testBundleReserve: a bundle line holds its components (quantity ×
// component quantity), merged with the cart's own lines of them; the hold
// is claimed and released per component; the bundle's availability is the
// minimum over its components, and is what a reservation of it takes.
func testBundleReserve(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 40, Slots: 3}, Options{})
		ctx := ctxb()
		const shop = 1
		for item := int64(1); item <= 3; item++ {
			e.stock(key(shop, item), 10)
		}
		b := e.setBundle(shop, 100, 3, 3, 1, 1, 2, 2)
		got, err := e.e.Bundle(ctx, shop, 100)
		if err != nil || !reflect.DeepEqual(*got, b) {
			t.Fatalf("bundle read back: %+v, %v; want %+v (components in the order given)", got, err, b)
		}

		id := uuid.New()
		hd, err := e.reserve(shop, id, one(100, 2))
		if err != nil {
			t.Fatal(err)
		}
		want := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}, {ItemID: 2, LocationID: 1, Quantity: 4}, {ItemID: 3, LocationID: 1, Quantity: 6}}
		if !reflect.DeepEqual(hd.Lines, want) {
			t.Fatalf("hold lines %+v, want the components %+v", hd.Lines, want)
		}
		e.heldUnits(shop, map[int64]int{1: 2, 2: 4, 3: 6})
		// The same checkout and the same bundle: the same hold, replayed.
		if again, err := e.reserve(shop, id, one(100, 2)); err != nil || !again.Replayed || !reflect.DeepEqual(again.Lines, want) {
			t.Fatalf("retry: %+v, %v; want the hold replayed", again, err)
		}
		if _, err := e.e.Claim(ctx, shop, id); err != nil {
			t.Fatal(err)
		}
		for item, avail := range map[int64]int{1: 8, 2: 6, 3: 4} {
			if l := e.level(key(shop, item)); l.Available != avail || l.Held != 0 {
				t.Fatalf("item %d after the claim: %+v, want %d available", item, l, avail)
			}
		}

		// A cart of the bundle and one of its components: merged lines.
		id2 := uuid.New()
		hd, err = e.reserve(shop, id2, []holdfast.Line{{ItemID: 100, LocationID: 1, Quantity: 1}, {ItemID: 1, LocationID: 1, Quantity: 1}})
		if err != nil {
			t.Fatal(err)
		}
		want = []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}, {ItemID: 2, LocationID: 1, Quantity: 2}, {ItemID: 3, LocationID: 1, Quantity: 3}}
		if !reflect.DeepEqual(hd.Lines, want) {
			t.Fatalf("merged hold lines %+v, want %+v", hd.Lines, want)
		}
		// An edit may name the bundle too: its lines stay components.
		hd, err = e.edit(shop, id2, hd.Revision+1, 0, line(100, 1))
		if err != nil {
			t.Fatalf("edit to one bundle: %v", err)
		}
		want = []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 2}, {ItemID: 3, LocationID: 1, Quantity: 3}}
		if !reflect.DeepEqual(hd.Lines, want) {
			t.Fatalf("edited hold lines %+v, want %+v", hd.Lines, want)
		}
		e.heldUnits(shop, map[int64]int{1: 1, 2: 2, 3: 3})
		e.release(shop, id2)
		e.heldUnits(shop, map[int64]int{1: 0, 2: 0, 3: 0})

		// Availability: the fewest whole bundles over the components (8/1,
		// 6/2, 4/3: 1), and exactly what a reservation of it takes.
		a := e.availability(holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{100, 2}, Locations: []int64{1}})
		sameAvailability(t, a, &holdfast.Availability{ShopID: shop, Locations: []int64{1}, Items: []holdfast.ItemAvailability{
			{ItemID: 100, Sellable: 1, Whole: 1, Locations: []holdfast.LocationAvailability{{LocationID: 1, Sellable: 1}}},
			{ItemID: 2, Sellable: 6, Whole: 6, Locations: []holdfast.LocationAvailability{{LocationID: 1, Sellable: 6}}},
		}})
		e.checkAvailability(a)
		// A second location: item 3 has 5 more there, the others none.
		e.stock(holdfast.Key{ShopID: shop, ItemID: 3, LocationID: 2}, 5)
		a = e.availability(holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{100}, Locations: []int64{1, 2}})
		sameAvailability(t, a, &holdfast.Availability{ShopID: shop, Locations: []int64{1, 2}, Items: []holdfast.ItemAvailability{
			// Split, item 3 comes from both locations (9: 3 bundles); whole,
			// no location has 6 of it.
			{ItemID: 100, Sellable: 3, Whole: 1, Locations: []holdfast.LocationAvailability{{LocationID: 1, Sellable: 1}, {LocationID: 2, Sellable: 0, NotStocked: true}}},
		}})
		e.checkAvailability(a)

		// Deleted: the item is no bundle any more (not stocked itself).
		if err := e.e.DeleteBundle(ctx, shop, 100); err != nil {
			t.Fatal(err)
		}
		if err := e.e.DeleteBundle(ctx, shop, 100); err != nil {
			t.Fatalf("delete again: %v, want no error", err)
		}
		if _, err := e.e.Bundle(ctx, shop, 100); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("deleted bundle read: %v, want ErrNotFound", err)
		}
		var ise *holdfast.InsufficientStockError
		if _, err := e.reserve(shop, uuid.New(), one(100, 1)); !errors.As(err, &ise) || len(ise.Lines) != 1 || ise.Lines[0].ItemID != 100 || !ise.Lines[0].NotStocked {
			t.Fatalf("reserve of a deleted bundle: %v, want item 100 not stocked", err)
		}
	})
}

// testBundleAllOrNothing: one short component refuses the whole bundle,
// naming that component alone (and a never-stocked one as not stocked);
// nothing is held.
func testBundleAllOrNothing(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 40, Slots: 3}, Options{})
		const shop = 1
		e.stock(key(shop, 1), 5)
		e.stock(key(shop, 2), 5)
		e.stock(key(shop, 3), 1)
		e.setBundle(shop, 200, 1, 1, 2, 1, 3, 2)
		_, err := e.reserve(shop, uuid.New(), one(200, 1))
		var ise *holdfast.InsufficientStockError
		if !errors.As(err, &ise) {
			t.Fatalf("reserve with component 3 short: %v, want *InsufficientStockError", err)
		}
		if want := []holdfast.Shortfall{{ItemID: 3, LocationID: 1, Requested: 2, Sellable: 1}}; !reflect.DeepEqual(ise.Lines, want) {
			t.Fatalf("shortfall %+v, want %+v (the short component, alone)", ise.Lines, want)
		}
		e.heldUnits(shop, map[int64]int{1: 0, 2: 0, 3: 0})
		e.assertSellable(key(shop, 1), 5)
		e.assertSellable(key(shop, 3), 1)

		// A component never stocked names itself as not stocked.
		e.setBundle(shop, 201, 1, 1, 9, 1)
		if _, err := e.reserve(shop, uuid.New(), one(201, 1)); !errors.As(err, &ise) || len(ise.Lines) != 1 || ise.Lines[0].ItemID != 9 || !ise.Lines[0].NotStocked {
			t.Fatalf("reserve with component 9 never stocked: %v, want item 9 not stocked", err)
		}
		e.heldUnits(shop, map[int64]int{1: 0})
	})
}

// testBundleBuyerLimit: a per-buyer limit of a component applies to the
// component's units a bundle takes.
func testBundleBuyerLimit(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{}, Options{})
	const shop = 1
	e.stock(key(shop, 1), 50)
	e.stock(key(shop, 2), 50)
	e.setBundle(shop, 300, 1, 1, 2, 2)
	e.setBuyerLimit(shop, 2, 3, 0)
	if _, _, err := e.buyerReserve(shop, "ann", one(300, 1), time.Hour); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.buyerReserve(shop, "ann", one(300, 1), time.Hour)
	wantBuyerLimit(t, err, 2, 3, 2, 2)
	if _, _, err := e.buyerReserve(shop, "bob", one(300, 1), time.Hour); err != nil {
		t.Fatalf("another buyer: %v", err)
	}
	e.heldUnits(shop, map[int64]int{1: 2, 2: 4})
}

// testBundleBadDefinitions: every malformed or refused definition is an
// *ArgumentError naming its field and writes nothing; a bundle line that
// expands past QuantityMax is refused the same way.
func testBundleBadDefinitions(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{QuantityMax: 100}, Options{})
	ctx := ctxb()
	const shop = 1
	e.stock(key(shop, 1), 50)
	good := e.setBundle(shop, 400, 1, 2, 7, 1) // 7: never stocked, allowed
	c := func(pairs ...int64) []holdfast.BundleComponent {
		var out []holdfast.BundleComponent
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, holdfast.BundleComponent{ItemID: pairs[i], Quantity: int(pairs[i+1])})
		}
		return out
	}
	many := make([]holdfast.BundleComponent, holdfast.BundleComponentsMax+1)
	for i := range many {
		many[i] = holdfast.BundleComponent{ItemID: int64(1000 + i), Quantity: 1}
	}
	for _, tc := range []struct {
		b     holdfast.Bundle
		field string
	}{
		{holdfast.Bundle{ShopID: 0, ItemID: 500, Components: c(1, 1)}, "shop_id"},
		{holdfast.Bundle{ShopID: shop, ItemID: 0, Components: c(1, 1)}, "item_id"},
		{holdfast.Bundle{ShopID: shop, ItemID: 500}, "components"},
		{holdfast.Bundle{ShopID: shop, ItemID: 500, Components: many}, "components"},
		{holdfast.Bundle{ShopID: shop, ItemID: 500, Components: c(1, 0)}, "components[0].quantity"},
		{holdfast.Bundle{ShopID: shop, ItemID: 500, Components: c(1, 101)}, "components[0].quantity"},
		{holdfast.Bundle{ShopID: shop, ItemID: 500, Components: c(1, 1, -3, 1)}, "components[1].item_id"},
		{holdfast.Bundle{ShopID: shop, ItemID: 500, Components: c(1, 1, 1, 2)}, "components[1].item_id"},
		{holdfast.Bundle{ShopID: shop, ItemID: 500, Components: c(1, 1, 500, 1)}, "components[1].item_id"},
		// Nesting: a component that is a bundle; a bundle that is a component.
		{holdfast.Bundle{ShopID: shop, ItemID: 500, Components: c(1, 1, 400, 1)}, "components[1].item_id"},
		{holdfast.Bundle{ShopID: shop, ItemID: 7, Components: c(1, 1)}, "item_id"},
		// A stocked item cannot become a bundle; redefining 400 to nest is refused.
		{holdfast.Bundle{ShopID: shop, ItemID: 1, Components: c(8, 1)}, "item_id"},
		{holdfast.Bundle{ShopID: shop, ItemID: 400, Components: c(1, 1, 400, 1)}, "components[1].item_id"},
	} {
		before := e.rows()
		err := e.e.SetBundle(ctx, tc.b)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != tc.field {
			t.Fatalf("set %+v: %v, want an *ArgumentError naming %s", tc.b, err, tc.field)
		}
		e.sameAllRows(before)
		if got, err := e.e.Bundle(ctx, shop, 400); err != nil || !reflect.DeepEqual(*got, good) {
			t.Fatalf("after a refused definition, bundle 400 reads %+v, %v", got, err)
		}
	}
	if _, err := e.e.Bundle(ctx, shop, 500); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("refused bundle 500 reads %v, want ErrNotFound", err)
	}
	// Stock on a bundle's id is refused (it would never be taken), as a
	// single change and as an import's entry, and writes nothing.
	n := 5
	before := e.rows()
	_, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: key(shop, 400), Set: &n, Reason: "stocktake"})
	var ae *holdfast.ArgumentError
	if !errors.As(err, &ae) || ae.Field != "item_id" {
		t.Fatalf("stock set on bundle 400: %v, want an *ArgumentError naming item_id", err)
	}
	_, err = e.e.ImportStock(ctx, holdfast.StockImport{ShopID: shop, ID: "bundle-import", Reason: "sync",
		Entries: []holdfast.StockImportEntry{{ItemID: 1, LocationID: 1, Available: 40}, {ItemID: 400, LocationID: 1, Available: 5}}})
	if !errors.As(err, &ae) || ae.Field != "entries[1].item_id" {
		t.Fatalf("an import with bundle 400: %v, want an *ArgumentError naming entries[1].item_id", err)
	}
	e.sameAllRows(before)
	// 60 bundles of 400 take 120 of item 1: past QuantityMax 100.
	before = e.rows()
	_, err = e.reserve(shop, uuid.New(), []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 1}, {ItemID: 400, LocationID: 1, Quantity: 60}})
	if !errors.As(err, &ae) || ae.Field != "lines[1].quantity" {
		t.Fatalf("a bundle line past QuantityMax: %v, want an *ArgumentError naming lines[1].quantity", err)
	}
	e.sameAllRows(before)
}

// testBundleRace: bundle buyers against buyers of its components alone,
// on limited stock, each acknowledged hold claimed: never oversold, every
// acknowledged hold claimable, and what was sold of each component is
// exactly what left its stock.
func testBundleRace(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 8, Slots: 3}, Options{Conns: 24})
		ctx := ctxb()
		const shop = 1
		initial := map[int64]int{1: 30, 2: 40, 3: 25}
		for item, n := range initial {
			e.stock(key(shop, item), n)
		}
		e.setBundle(shop, 100, 1, 1, 2, 2, 3, 1)
		carts := [][]holdfast.Line{
			one(100, 1), one(100, 2), one(1, 1), one(2, 3), one(3, 1),
			{{ItemID: 100, LocationID: 1, Quantity: 1}, {ItemID: 3, LocationID: 1, Quantity: 1}},
		}
		var (
			mu      sync.Mutex
			claimed = map[int64]int{}
			bad     errorSink
			bundles atomic.Int64
			wg      sync.WaitGroup
		)
		const workers = 16
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					cart := carts[(w+i)%len(carts)]
					id := uuid.New()
					hd, err := e.reserve(shop, id, cart)
					if errors.Is(err, holdfast.ErrInsufficientStock) {
						if i > 40 { // others may free nothing: every cart short, stop
							return
						}
						continue
					}
					if err != nil {
						bad.add("worker %d reserve %+v: %v", w, cart, err)
						return
					}
					c, err := e.e.Claim(ctx, shop, id)
					if err != nil || c.Status != holdfast.StatusClaimed {
						bad.add("worker %d: acknowledged hold %s not claimable: %+v, %v", w, id, c, err)
						return
					}
					if cart[0].ItemID == 100 {
						bundles.Add(1)
					}
					mu.Lock()
					for _, l := range hd.Lines {
						if l.ItemID == 100 {
							bad.add("hold %s has a line of the bundle itself: %+v", id, hd.Lines)
						}
						claimed[l.ItemID] += l.Quantity
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		bad.check(t)
		if bundles.Load() == 0 {
			t.Fatal("no bundle reservation succeeded: the race raced nothing")
		}
		for item, n := range initial {
			l := e.level(key(shop, item))
			if l.Available != n-claimed[item] || l.Held != 0 || claimed[item] > n {
				t.Fatalf("item %d: %+v after %d of %d claimed", item, l, claimed[item], n)
			}
		}
		t.Logf("%d bundles and components claimed: %v", bundles.Load(), claimed)
	})
}
