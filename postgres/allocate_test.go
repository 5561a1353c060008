package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestAllocationWaitsForRefill: the first candidate that can supply a line
// gets it even when its buffer is empty and must be refilled — on the slow
// levels: a ReserveTx goes straight to the locked level (key locks, refill,
// counter locks, snapshot), a Reserve first refills in a transaction of its
// own and takes again. It never falls back to a later candidate whose
// buffer happens to be full.
func TestAllocationWaitsForRefill(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyPool, PoolCap: 3}, 0)
	ctx := context.Background()
	k1 := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	k2 := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 2}
	e.stock(k1, 20)
	e.stock(k2, 20)
	alloc := []holdfast.Line{{ItemID: 1, Quantity: 3, Candidates: holdfast.LocationsOf(1, 2)}}
	want := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 3}}
	empty := func() {
		t.Helper()
		if _, err := reserve(t, e.c, 1, uuid.New(), one(1, 3)); err != nil {
			t.Fatal(err)
		}
		if l := e.level(k1); l.Pooled != 0 || l.Sellable == 0 {
			t.Fatalf("setup: location 1 should have stock and an empty buffer: %+v", l)
		}
	}

	empty()
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	h, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: alloc})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Lines, want) {
		t.Fatalf("ReserveTx allocated %+v, want %+v", h.Lines, want)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	empty()
	h, err = reserve(t, e.c, 1, uuid.New(), alloc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Lines, want) {
		t.Fatalf("Reserve allocated %+v, want %+v", h.Lines, want)
	}
	if l1, l2 := e.level(k1), e.level(k2); l1.Held != 12 || l2.Held != 0 {
		t.Fatalf("held at location 1: %+v, at 2: %+v; want 12 and 0", l1, l2)
	}
}
