package client_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
)

// TestClientBundles: the client's bundle calls; a bundle reserved through
// the client holds its components; a refused definition is an *Error
// matching holdfast.ErrInvalidArgument with its field.
func TestClientBundles(t *testing.T) {
	t.Parallel()
	_, url, key, _ := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	for _, item := range []int64{11, 12} {
		if _, err := c.SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, 10, "stocktake", ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Bundle(ctx, 1, 910); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("no bundle yet: %v", err)
	}
	want := holdfast.Bundle{ShopID: 1, ItemID: 910, Components: []holdfast.BundleComponent{{ItemID: 12, Quantity: 3}, {ItemID: 11, Quantity: 1}}}
	if err := c.SetBundle(ctx, want); err != nil {
		t.Fatal(err)
	}
	if b, err := c.Bundle(ctx, 1, 910); err != nil || !reflect.DeepEqual(*b, want) {
		t.Fatalf("read bundle: %+v %v", b, err)
	}
	h, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 910, LocationID: 1, Quantity: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if wantLines := []holdfast.Line{{ItemID: 11, LocationID: 1, Quantity: 2}, {ItemID: 12, LocationID: 1, Quantity: 6}}; !reflect.DeepEqual(h.Lines, wantLines) {
		t.Fatalf("hold lines %+v, want %+v", h.Lines, wantLines)
	}
	err = c.SetBundle(ctx, holdfast.Bundle{ShopID: 1, ItemID: 911, Components: []holdfast.BundleComponent{{ItemID: 910, Quantity: 1}}})
	var ce *client.Error
	if !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ce) || ce.Field != "components[0].item_id" {
		t.Fatalf("nested bundle: %v (%+v)", err, ce)
	}
	if err := c.DeleteBundle(ctx, 1, 910); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Bundle(ctx, 1, 910); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("deleted bundle: %v", err)
	}
}
