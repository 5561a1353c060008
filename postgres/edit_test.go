package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestEditTxAndClaimLinesTx: the …Tx twins run in the caller's transaction
// (in a savepoint): rolled back, nothing happened; a failed one leaves the
// caller's transaction usable; committed, the edit and the partial claim
// are there, with the caller's own row.
func TestEditTxAndClaimLinesTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyCounter}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 1}
	e.stock(k, 10)
	id := uuid.New()
	if _, err := reserve(t, e.c, 1, id, one(42, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(ctx, "CREATE TABLE app_orders (checkout uuid PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	edit := holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: one(42, 5)}

	// Rolled back: the hold and the stock are as they were.
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := e.c.EditTx(ctx, tx, edit); err != nil || h.Revision != 2 {
		t.Fatalf("EditTx: %+v %v", h, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err := e.c.Hold(ctx, 1, id); err != nil || h.Revision != 1 || h.Lines[0].Quantity != 2 {
		t.Fatalf("after a rolled-back EditTx: %+v %v", h, err)
	}
	if l := e.level(k); l.Held != 2 {
		t.Fatalf("after a rolled-back EditTx: %+v", l)
	}

	// A refused edit leaves the caller's transaction usable; then the
	// edit and the partial claim commit with the caller's row.
	tx, err = e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := e.c.EditTx(ctx, tx, holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: one(42, 11)}); !errors.Is(err, holdfast.ErrInsufficientStock) {
		t.Fatalf("EditTx past the stock: %v, want ErrInsufficientStock", err)
	}
	if _, err := e.c.EditTx(ctx, tx, edit); err != nil {
		t.Fatalf("EditTx after a refused one: %v", err)
	}
	h, err := e.c.ClaimLinesTx(ctx, tx, 1, id, one(42, 3))
	if err != nil || h.Status != holdfast.StatusClaimed || !slices.Equal(h.Released, one(42, 2)) {
		t.Fatalf("ClaimLinesTx: %+v %v", h, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO app_orders VALUES ($1)", id); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err := e.c.Hold(ctx, 1, id); err != nil || h.Status != holdfast.StatusClaimed || h.Revision != 2 || h.Lines[0].Quantity != 3 {
		t.Fatalf("after commit: %+v %v", h, err)
	}
	if l := e.level(k); l.Available != 7 || l.Held != 0 {
		t.Fatalf("after commit: %+v, want 7 available", l)
	}
}
