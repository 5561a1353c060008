package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// lapsed polls until every hold of ids reads as lapsed (StatusExpired,
// still claimable: not swept), bounded.
func lapsed[TTx comparable](t *testing.T, in *Instance[TTx], ids []uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	var zero TTx
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			var h *holdfast.Hold
			err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteRead, func(tx TTx) error {
				var err error
				h, err = in.Driver.ReadHold(ctx, tx, holdfast.RouteRead, key.ShopID, id)
				return err
			})
			if err != nil {
				t.Fatalf("ReadHold %v: %v", id, err)
			}
			if h.Status == holdfast.StatusExpired && h.Claimable {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("hold %v never lapsed: %+v", id, h)
			}
		}
	}
}

// sweep runs one SweepAttempt in a maintenance transaction.
func sweep[TTx comparable](in *Instance[TTx], limit int, fail error) (int, error) {
	ctx := context.Background()
	var n int
	err := in.Driver.MaintenanceAttempt(ctx, holdfast.RouteSweep, func(tx TTx) error {
		var err error
		n, err = in.Driver.SweepAttempt(ctx, tx, limit)
		if err == nil {
			err = fail
		}
		return err
	})
	return n, err
}

// testSweepAttempt: SweepAttempt expires at most limit lapsed holds and
// gives their units back; a MaintenanceAttempt whose fn fails keeps
// nothing of it, one that succeeds commits it.
func testSweepAttempt[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	setStock(t, in, key, 10)
	if n, err := sweep(in, 10, nil); err != nil || n != 0 {
		t.Fatalf("SweepAttempt with no hold: %d, %v; want 0", n, err)
	}
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	for _, id := range ids {
		r := reservation(id, key, 2)
		r.TTL = time.Millisecond // below what the engine accepts: lapses at once
		if _, err := reserve(ctx, in, r); err != nil {
			t.Fatal(err)
		}
	}
	lapsed(t, in, ids)
	boom := errors.New("drivertest: fail the maintenance attempt")
	if n, err := sweep(in, 10, boom); !errors.Is(err, boom) || n != 3 {
		t.Fatalf("a failing MaintenanceAttempt around SweepAttempt: %d, %v; want 3 and its error", n, err)
	}
	lapsed(t, in, ids) // rolled back: still lapsed, not swept
	if n, err := sweep(in, 2, nil); err != nil || n != 2 {
		t.Fatalf("SweepAttempt limit 2 of 3 lapsed: %d, %v; want 2", n, err)
	}
	if n, err := sweep(in, 2, nil); err != nil || n != 1 {
		t.Fatalf("SweepAttempt of the last lapsed hold: %d, %v; want 1", n, err)
	}
	if n, err := sweep(in, 2, nil); err != nil || n != 0 {
		t.Fatalf("SweepAttempt with every hold swept: %d, %v; want 0", n, err)
	}
	if l, err := in.Engine.Level(ctx, key); err != nil || l.Available != 10 || l.Held != 0 {
		t.Fatalf("level after sweeping every hold: %+v, %v; want 10 available, none held", l, err)
	}
}

func claimOnce[TTx comparable](in *Instance[TTx], id uuid.UUID) (*holdfast.Hold, error) {
	ctx := context.Background()
	var zero TTx
	var h *holdfast.Hold
	err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteClaim, func(tx TTx) error {
		var err error
		h, err = in.Driver.ClaimAttempt(ctx, tx, true, key.ShopID, id)
		return err
	})
	return h, err
}

// testPurgeAttempt: PurgeAttempt deletes nothing within the retention — an
// ended hold of now still answers.
func testPurgeAttempt[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	setStock(t, in, key, 10)
	id := uuid.New()
	if _, err := reserve(ctx, in, reservation(id, key, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := claimOnce(in, id); err != nil {
		t.Fatal(err)
	}
	var n int
	err := in.Driver.MaintenanceAttempt(ctx, holdfast.RoutePurge, func(tx TTx) error {
		var err error
		n, err = in.Driver.PurgeAttempt(ctx, tx, 100)
		return err
	})
	if err != nil || n != 0 {
		t.Fatalf("PurgeAttempt with nothing past its retention: %d, %v; want 0", n, err)
	}
	if h, err := claimOnce(in, id); err != nil || !h.Replayed {
		t.Fatalf("the claimed hold after the purge: %+v, %v; want it, Replayed", h, err)
	}
}

// testReplenishAttempt: ReplenishAttempt examines at most limit keys after
// its cursor, in key order, and answers the last one it examined.
func testReplenishAttempt[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	keys := []holdfast.Key{{ShopID: 1, ItemID: 3, LocationID: 1}, {ShopID: 1, ItemID: 5, LocationID: 1}, {ShopID: 2, ItemID: 1, LocationID: 1}}
	for _, k := range keys {
		setStock(t, in, k, 10)
	}
	page := func(after holdfast.Key, limit int) (int, holdfast.Key, int) {
		t.Helper()
		var n, added int
		var last holdfast.Key
		err := in.Driver.MaintenanceAttempt(ctx, holdfast.RouteReplenish, func(tx TTx) error {
			var err error
			n, last, added, err = in.Driver.ReplenishAttempt(ctx, tx, after, limit)
			return err
		})
		if err != nil {
			t.Fatalf("ReplenishAttempt after %v: %v", after, err)
		}
		if added < 0 {
			t.Fatalf("ReplenishAttempt added %d units", added)
		}
		return n, last, added
	}
	if n, last, _ := page(holdfast.Key{}, 2); n != 2 || last != keys[1] {
		t.Fatalf("first page of 2: %d keys, last %v; want 2, %v", n, last, keys[1])
	}
	if n, last, _ := page(keys[1], 2); n != 1 || last != keys[2] {
		t.Fatalf("second page: %d keys, last %v; want 1, %v", n, last, keys[2])
	}
	if n, _, _ := page(keys[2], 2); n != 0 {
		t.Fatalf("past the last key: %d keys; want 0", n)
	}
	for _, k := range keys {
		if l, err := in.Engine.Level(ctx, k); err != nil || l.Available != 10 || l.Held != 0 {
			t.Fatalf("level of %v after the replenish: %+v, %v; want 10 available, none held", k, l, err)
		}
	}
}

// testExpiryProber: a driver.ExpiryProber answers no expiry while no hold
// is held, then the wait until the held hold's expiry (within its TTL).
func testExpiryProber[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	p, ok := in.Driver.(driver.ExpiryProber)
	if !ok {
		t.Skip("the driver has no ExpiryProber")
	}
	if d, ok, err := p.NextExpiry(ctx); err != nil || ok {
		t.Fatalf("NextExpiry with no hold: %v, %v, %v; want none", d, ok, err)
	}
	setStock(t, in, key, 10)
	r := reservation(uuid.New(), key, 1)
	r.TTL = time.Hour
	if _, err := reserve(ctx, in, r); err != nil {
		t.Fatal(err)
	}
	if d, ok, err := p.NextExpiry(ctx); err != nil || !ok || d <= 0 || d > time.Hour {
		t.Fatalf("NextExpiry with a hold held for an hour: %v, %v, %v; want within the hour", d, ok, err)
	}
}

// testChangedKeys: a driver.ChangedKeys's queue is empty on a new database,
// and RefillChangedKeys of a free key refills it without calling it busy.
func testChangedKeys[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	ck, ok := in.Driver.(driver.ChangedKeys)
	if !ok {
		t.Skip("the driver has no ChangedKeys")
	}
	if keys, err := ck.DequeueChangedKeys(ctx, 10); err != nil || len(keys) != 0 {
		t.Fatalf("DequeueChangedKeys on a new database: %v, %v; want none", keys, err)
	}
	setStock(t, in, key, 10)
	if busy, err := ck.RefillChangedKeys(ctx, []holdfast.Key{key}); err != nil || len(busy) != 0 {
		t.Fatalf("RefillChangedKeys of a free key: busy %v, %v; want none", busy, err)
	}
}
