package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestWaitsPurgedAfterRetention: an ended wait answers ErrWaitExpired for
// the retention window, then PurgeOnce deletes it and the checkout is
// unknown.
func TestWaitsPurgedAfterRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{OutcomeRetention: time.Hour}, 0)
	ctx := context.Background()
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 1)
	if _, err := reserve(t, e.c, 1, uuid.New(), one(1, 1)); err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	_, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: w, Lines: one(1, 1), Wait: time.Minute})
	if !errors.Is(err, holdfast.ErrWaitlisted) {
		t.Fatalf("reserve with wait: %v", err)
	}
	e.clock.Advance(2 * time.Minute)
	if n, err := e.c.ServeWaitlist(ctx); n != 1 || err != nil {
		t.Fatalf("serve: %d %v", n, err)
	}
	e.clock.Advance(30 * time.Minute)
	if _, err := e.c.PurgeOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Hold(ctx, 1, w); !errors.Is(err, holdfast.ErrWaitExpired) {
		t.Fatalf("inside retention: %v, want ErrWaitExpired", err)
	}
	e.clock.Advance(31 * time.Minute)
	if _, err := e.c.PurgeOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Hold(ctx, 1, w); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("after the purge: %v, want ErrNotFound", err)
	}
}

// TestReserveTxRefusesWait: a reservation inside the caller's transaction
// cannot wait (its enqueue would need a transaction of its own); the
// caller's transaction is left usable and nothing is written.
func TestReserveTxRefusesWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{}, 0)
	ctx := context.Background()
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 1)
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1), Wait: time.Minute})
	var ae *holdfast.ArgumentError
	if !errors.As(err, &ae) || ae.Field != "wait" {
		t.Fatalf("ReserveTx with Wait: %v, want an *ArgumentError for wait", err)
	}
	if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1)}); err != nil {
		t.Fatalf("the caller's transaction after the refusal: %v", err)
	}
}
