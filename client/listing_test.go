package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
)

// TestClientListings: the client pages through holds and the ledger as the
// engine lists them, and reports a bad query as an argument error.
func TestClientListings(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	ctx := context.Background()
	c := client.New(url, key)
	k := holdfast.Key{ShopID: 1, ItemID: 5, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 10, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	var ids []uuid.UUID
	for range 3 {
		id := uuid.New()
		if _, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: id, Lines: []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 1}}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := c.Claim(ctx, 1, ids[1]); err != nil {
		t.Fatal(err)
	}
	var got []holdfast.Hold
	q := holdfast.HoldQuery{ShopID: 1, ItemID: 5, Limit: 2}
	for {
		p, err := c.Holds(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Holds...)
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	want, err := hc.Holds(ctx, holdfast.HoldQuery{ShopID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(want.Holds) != 3 {
		t.Fatalf("client listed %d holds, engine %d", len(got), len(want.Holds))
	}
	for i := range got {
		g, w := got[i], want.Holds[i]
		if g.CheckoutID != w.CheckoutID || g.Status != w.Status || g.Claimable != w.Claimable || !g.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("hold %d: client %+v, engine %+v", i, g, w)
		}
	}
	l, err := c.Ledger(ctx, holdfast.LedgerQuery{Key: k, Limit: 1})
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Reason != "claim" || l.Entries[0].Reference != ids[1].String() || l.Next == "" {
		t.Fatalf("ledger page: %+v, %v", l, err)
	}
	l, err = c.Ledger(ctx, holdfast.LedgerQuery{Key: k, After: l.Next})
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Reason != "stocktake" || l.Next != "" {
		t.Fatalf("second ledger page: %+v, %v", l, err)
	}
	_, err = c.Holds(ctx, holdfast.HoldQuery{ShopID: 1, Status: "pending"})
	var ce *client.Error
	if !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ce) || ce.Field != "status" {
		t.Errorf("a bad status: %v", err)
	}
}
