package postgres_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestReserveTxBundleOneConnection: ReserveTx of a bundle with no
// definitions cached reads them in the caller's transaction — on a pool of
// one connection, which the caller holds, it still answers (a read on the
// pool would wait for ever) — and commits the components with the caller.
func TestReserveTxBundleOneConnection(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 1)
	hf, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for item := int64(1); item <= 2; item++ {
		if _, err := hf.SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, 10, "stocktake", ""); err != nil {
			t.Fatal(err)
		}
	}
	// SetBundle drops the shop's cached definitions: the cache is cold.
	if err := hf.SetBundle(ctx, holdfast.Bundle{ShopID: 1, ItemID: 100, Components: []holdfast.BundleComponent{{ItemID: 1, Quantity: 1}, {ItemID: 2, Quantity: 3}}}); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	id := uuid.New()
	h, err := hf.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 100, LocationID: 1, Quantity: 2}}})
	if err != nil {
		t.Fatalf("ReserveTx of a bundle on a one-connection pool: %v", err)
	}
	want := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}, {ItemID: 2, LocationID: 1, Quantity: 6}}
	if !reflect.DeepEqual(h.Lines, want) {
		t.Fatalf("lines %+v, want %+v", h.Lines, want)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := hf.Hold(ctx, 1, id); err != nil || !reflect.DeepEqual(got.Lines, want) {
		t.Fatalf("after commit: %+v, %v", got, err)
	}
}
