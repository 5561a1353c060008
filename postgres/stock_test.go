package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
)

// TestExpiredHoldStillOwnsUnits reproduces the seed's first defect:
// replenishment that counts only unexpired holds, plus the sweep, hands the
// same units out twice (seen: pool 19 + held 1 against available 10).
func TestExpiredHoldStillOwnsUnits(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, holdfast.Config{Strategy: s, LowWaterPercent: 100, Slots: 4}, 0)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 5, LocationID: 1}
			e.stock(k, 10)
			p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(5, 1), TTL: time.Minute}
			if _, err := e.c.Reserve(ctx, p); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Minute) // expired, not swept
			if _, err := e.c.Replenish(ctx); err != nil {
				t.Fatal(err)
			}
			if l := e.level(k); l.Pooled+l.Held != 10 {
				t.Fatalf("replenish counted the expired hold's units as free: %+v", l)
			}
			if _, err := e.c.SweepOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.Replenish(ctx); err != nil {
				t.Fatal(err)
			}
			if l := e.level(k); l.Pooled != 10 || l.Held != 0 {
				t.Fatalf("after sweep and replenish: %+v", l)
			}
			// Ten units sell, the eleventh does not.
			for i := range 10 {
				if _, err := reserve(t, e.c, 1, uuid.New(), one(5, 1)); err != nil {
					t.Fatalf("unit %d: %v", i, err)
				}
			}
			if _, err := reserve(t, e.c, 1, uuid.New(), one(5, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
				t.Fatalf("11th unit: %v", err)
			}
		})
	}
}

func TestTxTwinsCommitWithTheCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategySlots, Slots: 4}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 3, LocationID: 1}
	e.stock(k, 5)
	if _, err := e.db.Pool.Exec(ctx, "CREATE TABLE orders (checkout_id uuid PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	// Rolled back with the caller: nothing held.
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(3, 2)}); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	if l := e.level(k); l.Held != 0 {
		t.Fatalf("held after rollback: %+v", l)
	}
	// Sold out inside a caller's transaction leaves it usable.
	id := uuid.New()
	err = pgx.BeginFunc(ctx, e.db.Pool, func(tx pgx.Tx) error {
		if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(3, 9)}); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Errorf("oversized ReserveTx: %v", err)
		}
		if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(3, 2)}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO orders VALUES ($1)", id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The order row and the claim commit together.
	err = pgx.BeginFunc(ctx, e.db.Pool, func(tx pgx.Tx) error {
		if _, err := e.c.ClaimTx(ctx, tx, 1, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE orders SET checkout_id = checkout_id WHERE checkout_id = $1", id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := e.level(k); l.Available != 3 || l.Held != 0 {
		t.Fatalf("after ClaimTx: %+v", l)
	}
}

func TestOutcomesPurgedAfterRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{OutcomeRetention: time.Hour}, 0)
	ctx := context.Background()
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 3)
	id := uuid.New()
	if _, err := reserve(t, e.c, 1, id, one(1, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Release(ctx, 1, id); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(30 * time.Minute)
	if n, _ := e.c.PurgeOnce(ctx); n != 0 {
		t.Fatal("purged inside the retention window")
	}
	if h, err := e.c.Release(ctx, 1, id); err != nil || !h.Replayed {
		t.Fatalf("retry inside retention: %+v %v", h, err)
	}
	e.clock.Advance(31 * time.Minute)
	if n, err := e.c.PurgeOnce(ctx); n != 1 || err != nil {
		t.Fatalf("purge: %d %v", n, err)
	}
	if _, err := e.c.Hold(ctx, 1, id); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("after purge: %v", err)
	}
}
