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

// TestClientWaitlist: Wait is sent as wait_seconds; a waiting answer is a
// *holdfast.WaitlistedError from Reserve and from Hold; once the server
// granted the cart, Hold returns the hold.
func TestClientWaitlist(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 9, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 2, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	holder := uuid.New()
	if _, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: holder, Lines: []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	r := client.ReserveRequest{CheckoutID: w, Lines: []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 1}}, Wait: 90 * time.Second}
	h, err := c.Reserve(ctx, 1, r)
	var we *holdfast.WaitlistedError
	if !errors.As(err, &we) || h != nil || we.Position != 1 || len(we.Lines) != 1 || we.Lines[0].Requested != 1 || we.Lines[0].Sellable != 0 {
		t.Fatalf("reserve with wait: %+v %v", h, err)
	}
	if d := time.Until(we.WaitUntil); d <= 0 || d > 90*time.Second {
		t.Fatalf("wait until %v: not within the 90 s asked", we.WaitUntil)
	}
	if _, err := c.Hold(ctx, 1, w); !errors.Is(err, holdfast.ErrWaitlisted) {
		t.Fatalf("hold while waiting: %v, want ErrWaitlisted", err)
	}
	if _, err := c.Release(ctx, 1, holder); err != nil {
		t.Fatal(err)
	}
	if _, err := hc.ServeWaitlist(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err := c.Hold(ctx, 1, w); err != nil || h.Status != holdfast.StatusHeld || len(h.Lines) != 1 || h.Lines[0].Quantity != 1 {
		t.Fatalf("hold once served: %+v %v", h, err)
	}
	// Bad input: named, typed.
	r.CheckoutID, r.Wait = uuid.New(), time.Hour
	var ce *client.Error
	if _, err := c.Reserve(ctx, 1, r); !errors.As(err, &ce) || ce.Field != "wait_seconds" || !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Fatalf("wait of an hour: %v", err)
	}
}
