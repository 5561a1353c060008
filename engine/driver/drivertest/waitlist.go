package drivertest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// testWaitlistPrimitives: the waitlist server's primitives, in one
// maintenance transaction as the engine's pass runs them. AnyWaiting says
// whether anybody waits; WaitWindow answers the keys with waiters;
// WaitHeads the front waiter with its cart, TTL and buyer hash; LockWaitKey
// locks a stocked key; GrantWait grants nothing while the key's units are
// held by others, and the whole cart as a held hold once they are back,
// the hold recording the waiter's buyer (BuyerOf).
func testWaitlistPrimitives[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	d := in.Driver
	k := holdfast.Key{ShopID: 1, ItemID: 21, LocationID: 1}
	setStock(t, in, k, 3)
	if waiting, err := d.AnyWaiting(ctx); err != nil || waiting {
		t.Fatalf("AnyWaiting with nobody waiting: %v, %v", waiting, err)
	}
	a, b := uuid.New(), uuid.New()
	line := func(q int) []holdfast.Line {
		return []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: q}}
	}
	if _, err := in.Engine.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: a, Lines: line(3)}); err != nil {
		t.Fatal(err)
	}
	var we *holdfast.WaitlistedError
	if _, err := in.Engine.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: b, Lines: line(2), Wait: time.Minute, TTL: 2 * time.Minute, BuyerID: "bee"}); !errors.As(err, &we) {
		t.Fatalf("Reserve with wait on a held key: %v, want *WaitlistedError", err)
	}
	if waiting, err := d.AnyWaiting(ctx); err != nil || !waiting {
		t.Fatalf("AnyWaiting with a waiter: %v, %v", waiting, err)
	}
	// pass runs the primitives up to the grant; commit keeps what it did.
	var buyer []byte
	pass := func(commit bool) (bool, error) {
		var done bool
		err := d.MaintenanceAttempt(ctx, holdfast.RouteReplenish, func(tx TTx) error {
			if err := d.WaitServeLock(ctx, tx); err != nil {
				return err
			}
			window, err := d.WaitWindow(ctx, tx, holdfast.Key{}, 10)
			if err != nil {
				return err
			}
			if !slices.Equal(window, []holdfast.Key{k}) {
				t.Errorf("WaitWindow: %v, want [%v]", window, k)
			}
			heads, err := d.WaitHeads(ctx, tx, window)
			if err != nil {
				return err
			}
			if len(heads) != 1 || heads[0].Checkout != b || heads[0].Shop != 1 || !slices.Equal(heads[0].Lines, line(2)) || heads[0].TTL != 2*time.Minute {
				t.Fatalf("WaitHeads: %+v, want b waiting for 2 with a TTL of 2m", heads)
			}
			if buyer = heads[0].BuyerHash; len(buyer) != 32 {
				t.Fatalf("WaitHeads: buyer hash %x, want the 32-byte hash of b's buyer", buyer)
			}
			if ok, err := d.LockWaitKey(ctx, tx, k); err != nil || !ok {
				return errors.Join(err, errors.New("LockWaitKey of a stocked key: false"))
			}
			_, done, err = d.GrantWait(ctx, tx, heads[0])
			if err != nil {
				return err
			}
			if !commit {
				return driver.ErrRollback
			}
			return nil
		})
		if errors.Is(err, driver.ErrRollback) {
			err = nil
		}
		return done, err
	}
	if done, err := pass(false); err != nil || done {
		t.Fatalf("GrantWait while the key's units are held: done %v, %v; want nothing granted", done, err)
	}
	if _, err := in.Engine.Release(ctx, 1, a); err != nil {
		t.Fatal(err)
	}
	if done, err := pass(true); err != nil || !done {
		t.Fatalf("GrantWait once the units are back: done %v, %v; want granted", done, err)
	}
	got, err := in.Engine.Hold(ctx, 1, b)
	if err != nil || got.Status != holdfast.StatusHeld || !slices.Equal(got.Lines, line(2)) {
		t.Fatalf("b after its grant: %+v, %v; want a held hold of 2", got, err)
	}
	if waiting, err := d.AnyWaiting(ctx); err != nil || waiting {
		t.Fatalf("AnyWaiting after the grant: %v, %v; want nobody", waiting, err)
	}
	var zero TTx
	if err := d.Attempt(ctx, zero, true, holdfast.RouteRead, func(tx TTx) error {
		held, err := d.BuyerOf(ctx, tx, holdfast.RouteRead, 1, b)
		if err == nil && !bytes.Equal(held, buyer) {
			t.Errorf("BuyerOf b's granted hold: %x, want its wait's buyer %x", held, buyer)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// testEnqueue: a checkout without a hold or wait is ErrNotFound to
// ReserveExisting; WaitKeys reads what the cart's key has (available,
// held, no waiters yet); Enqueue puts it on the waitlist, after which the
// checkout waits (ReserveExisting answers its wait) and enqueueing it
// again is ErrRetry.
func testEnqueue[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	d := in.Driver
	var zero TTx
	k := holdfast.Key{ShopID: 1, ItemID: 22, LocationID: 1}
	setStock(t, in, k, 3)
	if _, err := in.Engine.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(),
		Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 3}}}); err != nil {
		t.Fatal(err)
	}
	r := reservation(uuid.New(), k, 2)
	short := []holdfast.Shortfall{{ItemID: k.ItemID, LocationID: k.LocationID, Requested: 2}}
	enqueue := func() error {
		return d.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
			return d.Enqueue(ctx, tx, r, r.Lines, short, time.Minute)
		})
	}
	err := d.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
		if _, err := d.ReserveExisting(ctx, tx, r); !errors.Is(err, holdfast.ErrNotFound) {
			t.Errorf("ReserveExisting of a new checkout: %v, want ErrNotFound", err)
		}
		kw, err := d.WaitKeys(ctx, tx, r)
		if err != nil {
			return err
		}
		if len(kw) != 1 || kw[0].Available != 3 || kw[0].Held != 3 || kw[0].Waited {
			t.Errorf("WaitKeys: %+v, want 3 available, 3 held, no waiters", kw)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := enqueue(); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	var we *holdfast.WaitlistedError
	if _, err := in.Engine.Hold(ctx, 1, r.Checkout); !errors.As(err, &we) {
		t.Fatalf("the enqueued checkout: %v, want *WaitlistedError", err)
	}
	if err := enqueue(); !errors.Is(err, driver.ErrRetry) {
		t.Fatalf("Enqueue of a waiting checkout: %v, want ErrRetry", err)
	}
	err = d.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
		_, err := d.ReserveExisting(ctx, tx, r)
		if !errors.As(err, &we) {
			t.Errorf("ReserveExisting of a waiting checkout: %v, want *WaitlistedError", err)
		}
		kw, err := d.WaitKeys(ctx, tx, r)
		if err != nil {
			return err
		}
		if len(kw) != 1 || !kw[0].Waited {
			t.Errorf("WaitKeys of a key with a waiter: %+v, want Waited", kw)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
