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

// TestClientPreorder: a pre-order cap set through the client lets a
// reservation go beyond the key's stock; the hold marks the pre-ordered
// units and their expected date; an edit of it is holdfast.ErrPreordered;
// a cap below what is outstanding is an invalid argument on cap.
func TestClientPreorder(t *testing.T) {
	t.Parallel()
	_, url, key, _ := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 9, LocationID: 1}
	one := 1
	if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &one, Reason: "sync"}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	p, err := c.SetPreorder(ctx, holdfast.Preorder{Key: k, Cap: 4, ExpectedAt: at})
	if err != nil || p.Cap != 4 || !p.ExpectedAt.Equal(at) || p.Headroom != 4 {
		t.Fatalf("set: %+v %v", p, err)
	}
	id := uuid.New()
	h, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: id, Lines: []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 3}}})
	if err != nil || len(h.Lines) != 1 || h.Lines[0].Quantity != 3 || h.Lines[0].Preordered != 2 || h.Lines[0].ExpectedAt == nil || !h.Lines[0].ExpectedAt.Equal(at) {
		t.Fatalf("reserve 3 of 1 with cap 4: %+v %v", h, err)
	}
	if _, err := c.Edit(ctx, 1, client.EditRequest{CheckoutID: id, Revision: 2, Lines: []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 1}}}); !errors.Is(err, holdfast.ErrPreordered) {
		t.Fatalf("edit: %v, want ErrPreordered", err)
	}
	if _, err := c.SetPreorder(ctx, holdfast.Preorder{Key: k, Cap: 1, ExpectedAt: at}); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Fatalf("cap 1 under 2 held: %v, want invalid argument", err)
	}
	if p, err := c.Preorder(ctx, k); err != nil || p.Held != 2 || p.Headroom != 2 {
		t.Fatalf("read: %+v %v", p, err)
	}
}
