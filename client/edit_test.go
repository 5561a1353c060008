package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
)

// TestEditAndClaimLines: the client's Edit and ClaimLines against a real
// server: revisions, a retry, a revision conflict with the current
// revision, a short line, and a partial claim's claimed and released lines.
func TestEditAndClaimLines(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	for _, item := range []int64{7, 8} {
		if _, err := c.SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, 4, "stocktake", ""); err != nil {
			t.Fatal(err)
		}
	}
	id := uuid.New()
	h, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: id, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 1}}})
	if err != nil || h.Revision != 1 {
		t.Fatalf("reserve: %+v %v", h, err)
	}
	lines := []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}, {ItemID: 8, LocationID: 1, Quantity: 3}}
	r := client.EditRequest{CheckoutID: id, Revision: 2, Lines: lines, TTL: 10 * time.Minute}
	h, err = c.Edit(ctx, 1, r)
	if err != nil || h.Revision != 2 || !slices.Equal(h.Lines, lines) || h.ExpiresAt.Sub(h.CreatedAt) < 10*time.Minute {
		t.Fatalf("edit: %+v %v", h, err)
	}
	if again, err := c.Edit(ctx, 1, r); err != nil || again.Revision != 2 || !again.ExpiresAt.Equal(h.ExpiresAt) {
		t.Fatalf("retried edit: %+v %v", again, err)
	}
	_, err = c.Edit(ctx, 1, client.EditRequest{CheckoutID: id, Revision: 7, Lines: lines})
	var ce *client.Error
	if !errors.Is(err, holdfast.ErrRevisionConflict) || !errors.As(err, &ce) || ce.CurrentRevision != 2 || ce.Status != 409 {
		t.Fatalf("stale revision: %#v", err)
	}
	_, err = c.Edit(ctx, 1, client.EditRequest{CheckoutID: id, Revision: 3, Lines: []holdfast.Line{{ItemID: 8, LocationID: 1, Quantity: 5}}})
	if !errors.Is(err, holdfast.ErrInsufficientStock) || !errors.As(err, &ce) ||
		len(ce.Lines) != 1 || ce.Lines[0] != (holdfast.Shortfall{ItemID: 8, LocationID: 1, Requested: 5, Sellable: 4}) {
		t.Fatalf("short edit: %#v", err)
	}
	got, err := c.ClaimLines(ctx, 1, id, []holdfast.Line{{ItemID: 8, LocationID: 1, Quantity: 1}})
	if err != nil || got.Status != holdfast.StatusClaimed ||
		!slices.Equal(got.Lines, []holdfast.Line{{ItemID: 8, LocationID: 1, Quantity: 1}}) ||
		!slices.Equal(got.Released, []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}, {ItemID: 8, LocationID: 1, Quantity: 2}}) {
		t.Fatalf("partial claim: %+v %v", got, err)
	}
	if again, err := c.ClaimLines(ctx, 1, id, []holdfast.Line{{ItemID: 8, LocationID: 1, Quantity: 1}}); err != nil || !slices.Equal(again.Released, got.Released) {
		t.Fatalf("retried partial claim: %+v %v", again, err)
	}
	for item, avail := range map[int64]int{7: 4, 8: 3} {
		if l, err := hc.Level(ctx, holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}); err != nil || l.Available != avail || l.Held != 0 {
			t.Fatalf("item %d: %+v %v", item, l, err)
		}
	}
	if err := (&client.Error{Code: "revision_conflict"}); !errors.Is(err, holdfast.ErrRevisionConflict) || errors.Is(err, holdfast.ErrIdempotencyConflict) {
		t.Fatal("revision_conflict does not match ErrRevisionConflict alone")
	}
}
