package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestReserveTxNotStocked: in the caller's transaction a key never stocked
// answers ErrNotStocked too, read in that transaction — with the pool's one
// connection held by it — and the transaction stays usable.
func TestReserveTxNotStocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 5)
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	_, err = e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(2, 1)})
	var ise *holdfast.InsufficientStockError
	if !errors.Is(err, holdfast.ErrNotStocked) || !errors.As(err, &ise) || !ise.Lines[0].NotStocked {
		t.Fatalf("ReserveTx of a key never stocked: %v, want ErrNotStocked", err)
	}
	if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1)}); err != nil {
		t.Fatalf("the transaction after the answer: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
