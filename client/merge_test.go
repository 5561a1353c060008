package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
)

// TestClientMerge: a merge through the client answers the destination
// with the summed lines, the source reads released with MergedInto, and a
// destination that ended matches holdfast.ErrMergeInto.
func TestClientMerge(t *testing.T) {
	t.Parallel()
	_, url, key, _ := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 10, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	guest, customer := uuid.New(), uuid.New()
	for id, q := range map[uuid.UUID]int{guest: 2, customer: 1} {
		if _, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: id, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: q}}}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := c.MergeCheckouts(ctx, 1, guest, customer)
	if err != nil || h.CheckoutID != customer || len(h.Lines) != 1 || h.Lines[0].Quantity != 3 {
		t.Fatalf("merge: %+v %v", h, err)
	}
	src, err := c.Hold(ctx, 1, guest)
	if err != nil || src.Status != holdfast.StatusReleased || src.MergedInto == nil || *src.MergedInto != customer {
		t.Fatalf("source: %+v %v", src, err)
	}
	if _, err := c.Claim(ctx, 1, customer); err != nil {
		t.Fatal(err)
	}
	other := uuid.New()
	if _, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: other, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	var ce *client.Error
	if _, err := c.MergeCheckouts(ctx, 1, other, customer); !errors.Is(err, holdfast.ErrMergeInto) || !errors.As(err, &ce) || ce.Field != "into" {
		t.Fatalf("merge into a claimed checkout: %v", err)
	}
}
