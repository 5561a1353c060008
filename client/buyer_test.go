package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
)

// TestClientBuyerLimits: the client's buyer-limit and safety-stock calls,
// its BuyerID, and buyer_limit_exceeded as an *Error matching
// holdfast.ErrBuyerLimitExceeded with the limit and what the buyer holds.
func TestClientBuyerLimits(t *testing.T) {
	t.Parallel()
	_, url, key, _ := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 8, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 10, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	if l, err := c.SetSafetyStock(ctx, k, 4); err != nil || l.Safety != 4 || l.Sellable != 6 {
		t.Fatalf("safety: %+v %v", l, err)
	}
	if l, err := c.Level(ctx, k); err != nil || l.Safety != 4 {
		t.Fatalf("level: %+v %v", l, err)
	}
	if _, err := c.BuyerLimit(ctx, 1, 8); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("no limit yet: %v", err)
	}
	want := holdfast.BuyerLimit{ShopID: 1, ItemID: 8, Limit: 3, Window: 2 * time.Hour}
	if err := c.SetBuyerLimit(ctx, want); err != nil {
		t.Fatal(err)
	}
	if l, err := c.BuyerLimit(ctx, 1, 8); err != nil || *l != want {
		t.Fatalf("read limit: %+v %v", l, err)
	}
	reserve := func(q int) error {
		_, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 8, LocationID: 1, Quantity: q}}, BuyerID: "cust-123"})
		return err
	}
	if err := reserve(2); err != nil {
		t.Fatal(err)
	}
	err := reserve(2)
	var ce *client.Error
	if !errors.Is(err, holdfast.ErrBuyerLimitExceeded) || !errors.As(err, &ce) || ce.BuyerLimit == nil ||
		*ce.BuyerLimit != (holdfast.BuyerLimitError{ItemID: 8, Limit: 3, Held: 2, Requested: 2}) || ce.Field != "buyer_id" {
		t.Fatalf("over the limit: %v (%+v)", err, ce)
	}
	if err := c.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: 1, ItemID: 8, Limit: -1}); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Fatalf("negative limit: %v", err)
	}
	if err := c.RemoveBuyerLimit(ctx, 1, 8); err != nil {
		t.Fatal(err)
	}
	if err := reserve(2); err != nil {
		t.Fatalf("after removal: %v", err)
	}
}
