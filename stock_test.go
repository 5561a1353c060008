package holdfast_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
)

// rowCounts is how many rows each of holdfast's tables has: a test asserts
// that a rejected call wrote nothing.
func rowCounts(t *testing.T, e *env) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tbl := range []string{"inventory_levels", "reservation_units", "inventory_counters", "holds", "reserved_quantities", "inventory_ledger"} {
		var n int
		if err := e.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+tbl).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[tbl] = n
	}
	return out
}

func TestBadArgumentsWriteNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	if _, err := reserve(t, e.c, 1, uuid.New(), one(1, 2)); err != nil {
		t.Fatal(err)
	}
	before := rowCounts(t, e)
	id := uuid.New()
	many := make([]holdfast.Line, 101)
	for i := range many {
		many[i] = holdfast.Line{ItemID: int64(i + 1), LocationID: 1, Quantity: 1}
	}
	cases := []struct {
		name  string
		p     holdfast.ReserveParams
		field string
	}{
		{"zero quantity", holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 0)}, "lines[0].quantity"},
		{"negative quantity", holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, -3)}, "lines[0].quantity"},
		{"huge quantity", holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 10_001)}, "lines[0].quantity"},
		{"empty cart", holdfast.ReserveParams{ShopID: 1, CheckoutID: id}, "lines"},
		{"too many lines", holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: many}, "lines"},
		{"duplicate lines", holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 1}, {ItemID: 1, LocationID: 1, Quantity: 2}}}, "lines[2]"},
		{"ttl too short", holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 1), TTL: time.Millisecond}, "ttl"},
		{"ttl too long", holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 1), TTL: 2 * time.Hour}, "ttl"},
		{"nil checkout", holdfast.ReserveParams{ShopID: 1, Lines: one(1, 1)}, "checkout_id"},
		{"zero shop", holdfast.ReserveParams{ShopID: 0, CheckoutID: id, Lines: one(1, 1)}, "shop_id"},
		{"negative item", holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(-1, 1)}, "lines[0].item_id"},
		{"zero location", holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 0, Quantity: 1}}}, "lines[0].location_id"},
	}
	for _, tc := range cases {
		_, err := e.c.Reserve(ctx, tc.p)
		var ae *holdfast.ArgumentError
		if !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("%s: got %v, want invalid %s", tc.name, err, tc.field)
		}
	}
	adjustCases := []func() error{
		func() error { _, err := e.c.Adjust(ctx, k, -11, "shrinkage", ""); return err },
		func() error { _, err := e.c.Adjust(ctx, k, 1, "", ""); return err },
		func() error { _, err := e.c.SetAvailable(ctx, k, -1, "stocktake", ""); return err },
		func() error {
			_, err := e.c.SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: 0, LocationID: 1}, 1, "stocktake", "")
			return err
		},
		func() error { _, err := e.c.Extend(ctx, 1, uuid.New(), 0); return err },
		func() error { _, err := e.c.Claim(ctx, 1, uuid.Nil); return err },
		func() error { _, err := e.c.Release(ctx, -1, uuid.New()); return err },
	}
	for i, f := range adjustCases {
		if err := f(); !errors.Is(err, holdfast.ErrInvalidArgument) {
			t.Errorf("case %d: got %v, want ErrInvalidArgument", i, err)
		}
	}
	after := rowCounts(t, e)
	for tbl, n := range before {
		if after[tbl] != n {
			t.Errorf("%s: %d rows before, %d after rejected calls", tbl, n, after[tbl])
		}
	}
}

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

func TestAdjustShrinksAndOverCommits(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, holdfast.Config{Strategy: s, Slots: 4}, 0)
			e.allowOver = true
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 8, LocationID: 1}
			e.stock(k, 10)
			big := uuid.New()
			if _, err := reserve(t, e.c, 1, big, one(8, 6)); err != nil {
				t.Fatal(err)
			}
			// Shrink the buffer first: 10 -> 7 leaves 1 sellable.
			if l, err := e.c.Adjust(ctx, k, -3, "shrinkage", "damaged"); err != nil || l.Available != 7 || l.Pooled > 1 || l.Sellable != 1 {
				t.Fatalf("adjust -3: %+v %v", l, err)
			}
			// Below the holds: over-committed, nothing more reserved.
			l, err := e.c.SetAvailable(ctx, k, 4, "stocktake", "count-2026-11")
			if err != nil || !l.OverCommitted || l.Pooled != 0 || l.Available != 4 {
				t.Fatalf("set 4: %+v %v", l, err)
			}
			e.checkInvariant(true)
			if _, err := reserve(t, e.c, 1, uuid.New(), one(8, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
				t.Fatalf("reserve on over-committed key: %v", err)
			}
			if _, err := e.c.Claim(ctx, 1, big); !errors.Is(err, holdfast.ErrOverCommitted) {
				t.Fatalf("claim beyond stock: %v", err)
			}
			if h, _ := e.c.Hold(ctx, 1, big); h.Status != holdfast.StatusHeld {
				t.Fatalf("failed claim changed the hold: %s", h.Status)
			}
			if _, err := e.c.Release(ctx, 1, big); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.Replenish(ctx); err != nil {
				t.Fatal(err)
			}
			// Whole again: the four units sell.
			if _, err := reserve(t, e.c, 1, uuid.New(), one(8, 4)); err != nil {
				t.Fatalf("reserve after release: %v", err)
			}
			// The audit trail has every change.
			var n, sum int
			if err := e.db.Pool.QueryRow(ctx, "SELECT count(*), sum(delta) FROM inventory_ledger").Scan(&n, &sum); err != nil {
				t.Fatal(err)
			}
			if n != 3 || sum != 4 {
				t.Fatalf("ledger: %d entries summing to %d", n, sum)
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
