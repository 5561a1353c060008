package shadow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestAllocationRefused: the shadow layer refuses allocated lines with an
// *ArgumentError naming the line's location, and neither side holds.
func TestAllocationRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	if err := r.sh.Enroll(ctx, 1); err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	_, err := r.sh.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{
		{ItemID: 1, LocationID: 1, Quantity: 1},
		{ItemID: 2, Quantity: 1, Candidates: holdfast.LocationsOf(1, 2)},
	}})
	var ae *holdfast.ArgumentError
	if !errors.As(err, &ae) || ae.Field != "lines[1].location_id" {
		t.Fatalf("allocated line through the shadow layer: %v, want an *ArgumentError on lines[1].location_id", err)
	}
	if _, err := r.hf.Hold(ctx, 1, id); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("holdfast side after the refusal: %v, want ErrNotFound", err)
	}
}
