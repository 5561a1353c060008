package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// allocation is a reservation of one allocated line of item 9, q units,
// from the candidates locs in that order.
func allocation(id uuid.UUID, q int, locs ...int64) *driver.Reservation {
	lines := []holdfast.Line{{ItemID: 9, Quantity: q, Candidates: holdfast.LocationsOf(locs...)}}
	raw, err := json.Marshal(lines)
	if err != nil {
		panic(err)
	}
	return &driver.Reservation{Shop: 1, Checkout: id, Lines: lines, LinesRaw: raw, TTL: time.Minute}
}

// testAllocatePhases: the three phases of an allocation attempt, in one
// transaction as the engine runs them, at each take mode. AllocateBegin
// reads the shop's location order (empty, not nil, when none is set);
// AllocateRead answers each key's sellable units in the keys' order, at
// the mode asked or a slower one; AllocateTake of a choice the keys can
// supply answers the hold with exactly the resolved lines, and the level
// shows them held; a choice beyond a key's stock comes up short (or, on
// the fast path, ErrSlowPath) and keeps nothing; a checkout that already
// has a hold is ErrHoldExists — from AllocateRead when the driver places
// its hold first, else from AllocateTake.
func testAllocatePhases[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	d := in.Driver
	var zero TTx
	one := holdfast.Key{ShopID: 1, ItemID: 9, LocationID: 1}
	two := holdfast.Key{ShopID: 1, ItemID: 9, LocationID: 2}
	keys := []holdfast.Line{{ItemID: 9, LocationID: 1}, {ItemID: 9, LocationID: 2}}

	err := d.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
		order, err := d.AllocateBegin(ctx, tx, allocation(uuid.New(), 1), true)
		if err != nil || order == nil || len(order) != 0 {
			t.Errorf("AllocateBegin without an order: %v, %v; want an empty order", order, err)
		}
		return driver.ErrRollback
	})
	if !errors.Is(err, driver.ErrRollback) {
		t.Fatalf("AllocateBegin: %v", err)
	}
	if err := in.Engine.SetLocationOrder(ctx, 1, []int64{2, 1}); err != nil {
		t.Fatal(err)
	}

	held := 0
	for _, mode := range []driver.TakeMode{driver.TakeFast, driver.TakeRetry, driver.TakeLocked} {
		setStock(t, in, one, 2)
		setStock(t, in, two, 5+held)
		id := uuid.New()
		r := allocation(id, 4, 1, 2)
		// A choice beyond key one's stock: short, nothing kept.
		err := d.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
			order, err := d.AllocateBegin(ctx, tx, r, true)
			if err != nil {
				return err
			}
			if !slices.Equal(order, []int64{2, 1}) {
				t.Errorf("mode %d: AllocateBegin's order %v, want [2 1]", mode, order)
			}
			read, err := d.AllocateRead(ctx, tx, true, r, keys, mode)
			if err != nil {
				return err
			}
			if !slices.Equal(read.Sellable, []int{2, 5}) || read.Mode < mode {
				t.Errorf("mode %d: AllocateRead: sellable %v mode %d; want [2 5] at mode %d or slower", mode, read.Sellable, read.Mode, mode)
			}
			_, short, err := d.AllocateTake(ctx, tx, true, r, read, []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 4}})
			switch {
			case errors.Is(err, driver.ErrSlowPath) && read.Mode == driver.TakeFast:
			case err != nil:
				return err
			case len(short) != 1 || short[0].LocationID != 1 || short[0].Requested != 4:
				t.Errorf("mode %d: AllocateTake beyond the stock: short %+v; want location 1 short", mode, short)
			}
			return driver.ErrRollback
		})
		if !errors.Is(err, driver.ErrRollback) {
			t.Fatalf("mode %d: a short allocation: %v", mode, err)
		}
		if lv, err := in.Engine.Level(ctx, one); err != nil || lv.Held != 0 {
			t.Fatalf("mode %d: key one after a short take rolled back: %+v, %v; want nothing held", mode, lv, err)
		}

		// A choice the keys supply: the hold, with the resolved lines.
		resolved := []holdfast.Line{{ItemID: 9, LocationID: 2, Quantity: 4}}
		var hold *holdfast.Hold
		m := mode
		for try := 0; ; try++ {
			err = d.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
				if _, err := d.AllocateBegin(ctx, tx, r, false); err != nil {
					return err
				}
				read, err := d.AllocateRead(ctx, tx, true, r, keys, m)
				if err != nil {
					return err
				}
				var short []holdfast.Shortfall
				hold, short, err = d.AllocateTake(ctx, tx, true, r, read, resolved)
				if err == nil && len(short) > 0 {
					t.Errorf("mode %d: AllocateTake of 4 of 5 units: short %+v", mode, short)
				}
				return err
			})
			if errors.Is(err, driver.ErrSlowPath) && try == 0 {
				// A buffer short of a refill: the engine refills, then
				// takes again, as here.
				if err := d.RefillInline(ctx, 1, resolved); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if errors.Is(err, driver.ErrSlowPath) && m == driver.TakeFast {
				// Refilled, and still no counter row of the key holds
				// the line's 4 units on its own (a buffer spread over
				// several rows): the engine takes the locked way.
				m = driver.TakeLocked
				continue
			}
			break
		}
		if err != nil || hold == nil || hold.CheckoutID != id || hold.Status != holdfast.StatusHeld || !slices.Equal(hold.Lines, resolved) {
			t.Fatalf("mode %d: AllocateTake: %+v, %v; want a held hold of %v", mode, hold, err, resolved)
		}
		held += 4
		if lv, err := in.Engine.Level(ctx, two); err != nil || lv.Held != held {
			t.Fatalf("mode %d: key two after the allocation: %+v, %v; want %d held", mode, lv, err, held)
		}

		// The same checkout again: the hold is in place.
		err = d.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
			if _, err := d.AllocateBegin(ctx, tx, r, false); err != nil {
				return err
			}
			read, err := d.AllocateRead(ctx, tx, true, r, keys, driver.TakeLocked)
			if err != nil {
				return err
			}
			if d.HoldFirst() {
				t.Errorf("AllocateRead of a checkout with a hold: %+v, want ErrHoldExists from a driver that places its hold first", read)
				return driver.ErrRollback
			}
			_, _, err = d.AllocateTake(ctx, tx, true, r, read, []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 1}})
			return err
		})
		if !errors.Is(err, driver.ErrHoldExists) {
			t.Fatalf("mode %d: an allocation of a checkout with a hold: %v, want ErrHoldExists", mode, err)
		}
	}
}

// testBuyerOf: BuyerOf reads the hash a hold was made for: the same for
// one buyer's holds, another for another buyer's, nil without a buyer.
func testBuyerOf[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	setStock(t, in, key, 10)
	var zero TTx
	buyerOf := func(buyer string) []byte {
		t.Helper()
		id := uuid.New()
		p := holdfast.ReserveParams{ShopID: key.ShopID, CheckoutID: id, BuyerID: buyer,
			Lines: []holdfast.Line{{ItemID: key.ItemID, LocationID: key.LocationID, Quantity: 1}}}
		if _, err := in.Engine.Reserve(ctx, p); err != nil {
			t.Fatalf("Reserve for %q: %v", buyer, err)
		}
		var hash []byte
		if err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
			var err error
			hash, err = in.Driver.BuyerOf(ctx, tx, holdfast.RouteReserve, key.ShopID, id)
			return err
		}); err != nil {
			t.Fatalf("BuyerOf: %v", err)
		}
		return hash
	}
	a1, a2, b, none := buyerOf("a"), buyerOf("a"), buyerOf("b"), buyerOf("")
	if len(a1) == 0 || !slices.Equal(a1, a2) || slices.Equal(a1, b) || none != nil {
		t.Fatalf("BuyerOf: a %x, a %x, b %x, none %x; want one hash per buyer, nil without one", a1, a2, b, none)
	}
}
