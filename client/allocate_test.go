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

// TestClientAllocation: the client sends allocated lines (candidates,
// split) and the shop's location order, and reads back the resolved lines,
// the by-item shortfall and the field of a bad input.
func TestClientAllocation(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	ctx := context.Background()
	for loc, n := range map[int64]int{1: 2, 2: 3} {
		if _, err := hc.Adjust(ctx, holdfast.Key{ShopID: 1, ItemID: 5, LocationID: loc}, n, "test", ""); err != nil {
			t.Fatal(err)
		}
	}
	c := client.New(url, key)
	h, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{
		{ItemID: 5, Quantity: 4, Candidates: holdfast.LocationsOf(2, 1), Split: true}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 1}, {ItemID: 5, LocationID: 2, Quantity: 3}}
	if !slices.Equal(h.Lines, want) {
		t.Fatalf("lines %+v, want %+v", h.Lines, want)
	}
	_, err = c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 5, Quantity: 2}}})
	var ae *client.Error
	if !errors.As(err, &ae) || !errors.Is(err, holdfast.ErrInvalidArgument) || ae.Field != "lines[0].location_id" {
		t.Fatalf("no candidates, no order: %v", err)
	}
	if err := c.SetLocationOrder(ctx, 1, []int64{1, 2}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.LocationOrder(ctx, 1); err != nil || !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("order %v %v", got, err)
	}
	_, err = c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 5, Quantity: 2}}})
	if !errors.As(err, &ae) || !errors.Is(err, holdfast.ErrInsufficientStock) ||
		!slices.Equal(ae.Lines, []holdfast.Shortfall{{ItemID: 5, LocationID: 0, Requested: 2, Sellable: 1}}) {
		t.Fatalf("short by item: %v %+v", err, ae)
	}
	if err := c.SetLocationOrder(ctx, 1, []int64{1, 1}); !errors.As(err, &ae) || ae.Field != "locations[1]" {
		t.Fatalf("duplicate location: %v", err)
	}
	if err := c.SetLocationOrder(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := c.LocationOrder(ctx, 1); err != nil || len(got) != 0 {
		t.Fatalf("cleared order %v %v", got, err)
	}
}
