package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
)

// TestClientForeignCursor (#24): a cursor used on a listing other than the
// one that issued it (other filters, another key's ledger) is an *Error
// with code invalid_cursor on field cursor, matching holdfast.ErrInvalidCursor
// and holdfast.ErrInvalidArgument, as the engine answers it.
func TestClientForeignCursor(t *testing.T) {
	t.Parallel()
	_, url, key, _ := server(t)
	ctx := context.Background()
	c := client.New(url, key)
	k := holdfast.Key{ShopID: 1, ItemID: 5, LocationID: 1}
	for _, n := range []int{10, 9} {
		if _, err := c.SetAvailable(ctx, k, n, "stocktake", ""); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := c.Holds(ctx, holdfast.HoldQuery{ShopID: 1, ItemID: 5, Limit: 1})
	if err != nil || p.Next == "" {
		t.Fatalf("first page: %+v %v", p, err)
	}
	l, err := c.Ledger(ctx, holdfast.LedgerQuery{Key: k, Limit: 1})
	if err != nil || l.Next == "" {
		t.Fatalf("first ledger page: %+v %v", l, err)
	}
	calls := map[string]func() error{
		"a filtered cursor without its filter": func() error {
			_, err := c.Holds(ctx, holdfast.HoldQuery{ShopID: 1, After: p.Next})
			return err
		},
		"a ledger cursor on another key": func() error {
			_, err := c.Ledger(ctx, holdfast.LedgerQuery{Key: holdfast.Key{ShopID: 1, ItemID: 6, LocationID: 1}, After: l.Next})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		var ce *client.Error
		if !errors.Is(err, holdfast.ErrInvalidCursor) || !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ce) ||
			ce.Status != 400 || ce.Code != "invalid_cursor" || ce.Field != "cursor" {
			t.Errorf("%s: %v, want a 400 invalid_cursor matching ErrInvalidCursor and ErrInvalidArgument", name, err)
		}
	}
}
