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

// TestClientDrops: a drop set, entered and drawn over HTTP: the entry
// answers waiting, a buyer's second checkout drop_entered, the draw (the
// server's engine's waitlist pass) holds the one unit for the one entrant,
// and the drawn drop read through the client verifies.
func TestClientDrops(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 70, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 1, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Drop(ctx, k); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("no drop yet: %v", err)
	}
	var ce *client.Error
	if _, err := c.SetDrop(ctx, holdfast.DropParams{Key: k}); !errors.As(err, &ce) || ce.Field != "window_seconds" {
		t.Fatalf("drop without a window: %v", err)
	}
	d, err := c.SetDrop(ctx, holdfast.DropParams{Key: k, Window: time.Second})
	if err != nil || d.State != holdfast.DropOpen || len(d.Commitment) != 64 || d.Seed != "" {
		t.Fatalf("set drop: %+v %v", d, err)
	}
	id := uuid.New()
	_, err = c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: id, BuyerID: "ann", Lines: []holdfast.Line{{ItemID: 70, LocationID: 1, Quantity: 1}}})
	if !errors.Is(err, holdfast.ErrWaitlisted) {
		t.Fatalf("entry: %v, want ErrWaitlisted", err)
	}
	_, err = c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), BuyerID: "ann", Lines: []holdfast.Line{{ItemID: 70, LocationID: 1, Quantity: 1}}})
	if !errors.Is(err, holdfast.ErrDropEntered) {
		t.Fatalf("second checkout of a buyer: %v, want ErrDropEntered", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := hc.ServeWaitlist(ctx); err != nil {
			t.Fatal(err)
		}
		if d, err = c.Drop(ctx, k); err != nil {
			t.Fatal(err)
		}
		if d.State == holdfast.DropDrawn {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("drop not drawn by the deadline: %+v", d)
		}
		time.Sleep(50 * time.Millisecond) // the window is real time here
	}
	if err := holdfast.VerifyDrop(d); err != nil || len(d.Entrants) != 1 || d.Entrants[0].CheckoutID != id {
		t.Fatalf("drawn drop %+v: %v", d, err)
	}
	if h, err := c.Hold(ctx, 1, id); err != nil || h.Status != holdfast.StatusHeld {
		t.Fatalf("the entrant after the draw: %+v %v, want held", h, err)
	}
}
