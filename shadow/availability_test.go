package shadow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/shadow"
)

// TestAvailabilityFromTheTruth: availability is read from the side that is
// the truth: the legacy store's reservable count while it is, holdfast's
// read once holdfast is; without locations, holdfast's order.
func TestAvailabilityFromTheTruth(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	if err := r.sh.Enroll(ctx, 1); err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 5, LocationID: 1}
	n := 10
	if _, err := r.sh.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.sh.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 3}}}); err != nil {
		t.Fatal(err)
	}
	// holdfast alone, behind the layer's back: only its read can see it.
	// (The hold above, made in legacy mode, is the legacy store's alone:
	// holdfast answers 10 - 2 once it is the truth.)
	if _, err := r.hf.SetSafetyStock(ctx, k, 2); err != nil {
		t.Fatal(err)
	}
	q := holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{5}, Locations: []int64{1}}
	for _, step := range []struct {
		mode shadow.Mode
		want int
	}{{shadow.ModeLegacy, 7}, {shadow.ModeShadow, 7}, {shadow.ModePrimary, 8}} {
		r.toMode(t, 1, step.mode)
		a, err := r.sh.Availability(ctx, q)
		if err != nil || a.Items[0].Sellable != step.want || a.Items[0].Locations[0].Sellable != step.want {
			t.Fatalf("%s: %+v %v, want %d", step.mode, a, err, step.want)
		}
	}
	var ae *holdfast.ArgumentError
	if _, err := r.sh.Availability(ctx, holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{5}}); !errors.As(err, &ae) || ae.Field != "locations" {
		t.Fatalf("no order, no locations: %v", err)
	}
}
