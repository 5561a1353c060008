package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
)

// TestClientAvailability: the client reads availability per item and
// location (the shop's order, or the query's), and a query the server
// refuses names its field; one it can tell is bad never leaves.
func TestClientAvailability(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	ctx := context.Background()
	for loc, n := range map[int64]int{1: 2, 2: 3} {
		if _, err := hc.Adjust(ctx, holdfast.Key{ShopID: 1, ItemID: 5, LocationID: loc}, n, "test", ""); err != nil {
			t.Fatal(err)
		}
	}
	c := client.New(url, key)
	if _, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 5, LocationID: 2, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	var ae *client.Error
	_, err := c.Availability(ctx, holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{5}})
	if !errors.As(err, &ae) || !errors.Is(err, holdfast.ErrInvalidArgument) || ae.Field != "locations" {
		t.Fatalf("no order, no locations: %v", err)
	}
	if err := c.SetLocationOrder(ctx, 1, []int64{2, 1}); err != nil {
		t.Fatal(err)
	}
	a, err := c.Availability(ctx, holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{5, 6}})
	if err != nil {
		t.Fatal(err)
	}
	want := &holdfast.Availability{ShopID: 1, Locations: []int64{2, 1}, Items: []holdfast.ItemAvailability{
		{ItemID: 5, Sellable: 4, Whole: 2, Locations: []holdfast.LocationAvailability{{LocationID: 2, Sellable: 2}, {LocationID: 1, Sellable: 2}}},
		{ItemID: 6, NotStocked: true, Locations: []holdfast.LocationAvailability{{LocationID: 2, NotStocked: true}, {LocationID: 1, NotStocked: true}}},
	}}
	same := a.ShopID == want.ShopID && slices.Equal(a.Locations, want.Locations) && slices.EqualFunc(a.Items, want.Items, func(x, y holdfast.ItemAvailability) bool {
		return x.ItemID == y.ItemID && x.Sellable == y.Sellable && x.Whole == y.Whole && x.NotStocked == y.NotStocked && slices.Equal(x.Locations, y.Locations)
	})
	if !same {
		t.Fatalf("availability %+v, want %+v", a, want)
	}
	if a, err := c.Availability(ctx, holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{5}, Locations: []int64{1}}); err != nil || a.Items[0].Sellable != 2 || !slices.Equal(a.Locations, []int64{1}) {
		t.Fatalf("at location 1: %+v %v", a, err)
	}
	var arg *holdfast.ArgumentError
	if _, err := c.Availability(ctx, holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{5, 5}}); !errors.As(err, &arg) || arg.Field != "items[1]" {
		t.Fatalf("duplicate item: %v", err)
	}
}
