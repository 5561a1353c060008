package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestLateClaimWaitsForRolledBackReservation (#10 item 5): a hold on a pool
// key expired and was swept; a concurrent reservation locked the key's
// pool rows and then rolls back. The late claim must wait for those rows
// and succeed — not answer hold_expired ("refund") while the stock was
// sellable all along.
func TestLateClaimWaitsForRolledBackReservation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyPool, PoolCap: 5}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 1)
	id := uuid.New()
	if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 1), TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Second)
	if n, err := e.c.SweepOnce(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if l := e.level(k); l.Pooled != 1 {
		t.Fatalf("the swept unit is not back in the pool: %+v", l)
	}
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1)}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		h   *holdfast.Hold
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := e.c.Claim(ctx, 1, id)
		done <- result{h, err}
	}()
	var res *result
	waitFor(t, "the late claim to wait for the reservation's rows, or answer", func() bool {
		select {
		case r := <-done:
			res = &r
			return true
		default:
			return lockWaiters(t, e) > 0
		}
	})
	if res != nil {
		t.Fatalf("late claim answered while the stock was only locked by a reservation in flight: %+v %v", res.h, res.err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.h.Status != holdfast.StatusClaimed {
		t.Fatalf("late claim after the reservation rolled back: %+v %v", r.h, r.err)
	}
	if l := e.level(k); l.Available != 0 || l.Held != 0 || l.Pooled != 0 {
		t.Fatalf("level: %+v", l)
	}
}
