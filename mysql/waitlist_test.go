package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// TestWaitsPurgedAfterRetention: an ended wait answers ErrWaitExpired for
// the retention window, then PurgeOnce deletes it and the checkout is
// unknown.
func TestWaitsPurgedAfterRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0, holdfast.Config{OutcomeRetention: time.Hour})
	ctx := context.Background()
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 1)
	if _, err := e.reserve(1, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 1}); err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	_, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: w, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}, Wait: time.Minute})
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
// caller's transaction is left usable.
func TestReserveTxRefusesWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0, holdfast.Config{})
	ctx := context.Background()
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 1)
	tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
	_, err = e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: lines, Wait: time.Minute})
	var ae *holdfast.ArgumentError
	if !errors.As(err, &ae) || ae.Field != "wait" {
		t.Fatalf("ReserveTx with Wait: %v, want an *ArgumentError for wait", err)
	}
	if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: lines}); err != nil {
		t.Fatalf("the caller's transaction after the refusal: %v", err)
	}
}
