package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestMergeCheckoutsTx: a merge in the caller's transaction commits and
// rolls back with it; a refused merge there leaves the caller's
// transaction usable.
func TestMergeCheckoutsTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 0)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := 10
	if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, Set: &n, Reason: "stocktake"}); err != nil {
		t.Fatal(err)
	}
	reserve := func(q int) uuid.UUID {
		id := uuid.New()
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: q}}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, commit := range []bool{false, true} {
		guest, customer := reserve(1), reserve(2)
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.MergeCheckoutsTx(ctx, tx, 1, uuid.New(), customer); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("merge of an unknown checkout in a transaction: %v", err)
		}
		if h, err := c.MergeCheckoutsTx(ctx, tx, 1, guest, customer); err != nil || h.Lines[0].Quantity != 3 {
			t.Fatalf("merge in a transaction: %+v %v", h, err)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		src, err := c.Hold(ctx, 1, guest)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := c.Hold(ctx, 1, customer)
		if err != nil {
			t.Fatal(err)
		}
		wantSrc, wantQty := map[bool]holdfast.Status{false: holdfast.StatusHeld, true: holdfast.StatusReleased}[commit], map[bool]int{false: 2, true: 3}[commit]
		if src.Status != wantSrc || dst.Lines[0].Quantity != wantQty || (src.MergedInto != nil) != commit {
			t.Fatalf("commit %v: source %+v, destination %+v", commit, src, dst)
		}
	}
	if _, err := c.MergeCheckoutsTx(ctx, nil, 1, uuid.New(), uuid.New()); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Fatalf("nil transaction: %v", err)
	}
	rep, err := c.CheckInvariant(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("invariant: %v %v", rep, err)
	}
}
