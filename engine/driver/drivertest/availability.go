package drivertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// testReadAvailability: ReadAvailability answers every key of items ×
// locations item by item in the items' order, locations in theirs, with
// free units (available less safety), held units, waiters and whether the
// key was ever stocked; without locations the shop's default order, read
// by the same statement; no order and no locations, no rows.
func testReadAvailability[TTx comparable](t *testing.T, h Harness[TTx]) {
	in := h.New(t)
	ctx := context.Background()
	k := func(item, loc int64) holdfast.Key { return holdfast.Key{ShopID: 1, ItemID: item, LocationID: loc} }
	setStock(t, in, k(7, 1), 6)
	setStock(t, in, k(7, 2), 3)
	setStock(t, in, k(9, 2), 0) // stocked once, with nothing
	if _, err := in.Engine.SetSafetyStock(ctx, k(7, 2), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Engine.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}
	// Item 7 at location 2: held out, then a cart waits for it.
	if _, err := in.Engine.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 7, LocationID: 2, Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Engine.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 7, LocationID: 2, Quantity: 1}}, Wait: time.Minute}); err == nil {
		t.Fatal("a reservation of what is not there was held, not queued")
	}
	want := []driver.KeyAvailability{
		{ItemID: 9, LocationID: 2, Free: 0, Held: 0, Stocked: true},
		{ItemID: 9, LocationID: 1},
		{ItemID: 8, LocationID: 2},
		{ItemID: 8, LocationID: 1},
		{ItemID: 7, LocationID: 2, Free: 2, Held: 2, Waiters: true, Stocked: true},
		{ItemID: 7, LocationID: 1, Free: 6, Held: 2, Stocked: true},
	}
	got, err := in.Driver.ReadAvailability(ctx, 1, []int64{9, 8, 7}, []int64{2, 1})
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ReadAvailability: %+v %v\nwant %+v", got, err, want)
	}
	// Without locations: none while the shop has no order, then its order.
	if got, err := in.Driver.ReadAvailability(ctx, 1, []int64{7}, []int64{}); err != nil || len(got) != 0 {
		t.Fatalf("no order, no locations: %+v %v, want no rows", got, err)
	}
	if err := in.Engine.SetLocationOrder(ctx, 1, []int64{2, 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := in.Driver.ReadAvailability(ctx, 1, []int64{9, 8, 7}, []int64{}); err != nil || !slices.Equal(got, want) {
		t.Fatalf("the shop's order: %+v %v\nwant %+v", got, err, want)
	}
	// Another shop's keys are not these.
	if got, err := in.Driver.ReadAvailability(ctx, 2, []int64{7}, []int64{1}); err != nil || !slices.Equal(got, []driver.KeyAvailability{{ItemID: 7, LocationID: 1}}) {
		t.Fatalf("shop 2: %+v %v", got, err)
	}
}
