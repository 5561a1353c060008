package drivertest

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// testCombinedAttempt: one combined transaction grants a batch key's
// requests in the order given while the units it may take last (a key as
// shallow as this one: all of them, however many rows it keeps; the
// PostgreSQL driver's own tests cover a deep key's stripes), answers each
// granted request's hold by its index (nil for the rest), leaves the
// granted units held, and does not grant a checkout that already has a
// hold, nor take units for it; where a batch takes from one of the key's
// rows, it says which requests it did not grant the others could serve.
func testCombinedAttempt[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	k := holdfast.Key{ShopID: 1, ItemID: 11, LocationID: 1}
	if _, err := in.Engine.SetStrategy(ctx, k, holdfast.StrategyBatch, 0); err != nil {
		t.Fatal(err)
	}
	stripes := in.Driver.CombineOverlap(k) // a key this shallow: 1 (its batches hold every row of it)
	setStock(t, in, k, 5*stripes)
	if !in.Driver.Combines(k) {
		t.Fatalf("Combines(%v) after SetStrategy batch: false", k)
	}
	a, b, c := reservation(uuid.New(), k, 2), reservation(uuid.New(), k, 4), reservation(uuid.New(), k, 3)
	attempt := func(reqs ...*driver.Reservation) ([]*holdfast.Hold, []bool) {
		t.Helper()
		var got []*holdfast.Hold
		var elsewhere []bool
		var err error
		for range 3 { // a lost connection or deadlock is the engine's to retry
			if got, elsewhere, err = in.Driver.CombinedAttempt(ctx, reqs, stripes-1); err == nil || !in.Driver.Retryable(err) {
				break
			}
		}
		if err != nil || len(got) != len(reqs) || (elsewhere != nil && len(elsewhere) != len(reqs)) {
			t.Fatalf("CombinedAttempt: %v, %v, %v; want %d answers", got, elsewhere, err, len(reqs))
		}
		return got, elsewhere
	}
	// elsewhereOf is the driver's elsewhere answer for request i.
	elsewhereOf := func(elsewhere []bool, i int) bool { return elsewhere != nil && elsewhere[i] }
	got, elsewhere := attempt(a, b, c)
	// 5 units on the stripe: a (2) fits, b (4) does not, c (3) does; b
	// fits the key's other stripe, where there is one.
	if got[0] == nil || got[1] != nil || got[2] == nil {
		t.Fatalf("CombinedAttempt granted %v; want a and c, not b", got)
	}
	if want := stripes > 1; elsewhereOf(elsewhere, 1) != want || elsewhereOf(elsewhere, 0) || elsewhereOf(elsewhere, 2) {
		t.Fatalf("CombinedAttempt's elsewhere: %v; want b's %v, a's and c's false", elsewhere, want)
	}
	// The stripe is empty now: d (4) fits the other stripe's 5, where
	// there is one; e (2) does not fit what d leaves of it.
	d, e := reservation(uuid.New(), k, 4), reservation(uuid.New(), k, 2)
	if got, elsewhere := attempt(d, e); got[0] != nil || got[1] != nil ||
		elsewhereOf(elsewhere, 0) != (stripes > 1) || elsewhereOf(elsewhere, 1) {
		t.Fatalf("CombinedAttempt on an empty stripe: %v, elsewhere %v; want nothing granted, d elsewhere (%v), e not", got, elsewhere, stripes > 1)
	}
	if got[0].Status != holdfast.StatusHeld || got[0].ExpiresAt.IsZero() {
		t.Fatalf("CombinedAttempt's hold of a: %+v, want held with an expiry", got[0])
	}
	if lv, err := in.Engine.Level(ctx, k); err != nil || lv.Held != 5 {
		t.Fatalf("level after the batch: %+v, %v; want 5 held", lv, err)
	}
	setStock(t, in, k, 10*stripes)
	again, _, err := in.Driver.CombinedAttempt(ctx, []*driver.Reservation{a}, 0)
	if err != nil || len(again) != 1 || again[0] != nil {
		t.Fatalf("CombinedAttempt of a checkout with a hold: %v, %v; want it not granted", again, err)
	}
	lv, err := in.Engine.Level(ctx, k)
	if err != nil || lv.Held != 5 || lv.Pooled != 10*stripes-5 {
		t.Fatalf("level after a batch of a held checkout: %+v, %v; want still 5 held, %d pooled (no units taken for it)", lv, err, 10*stripes-5)
	}
}
