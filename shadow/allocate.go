package shadow

import (
	"context"
	"fmt"

	"github.com/holdfast/holdfast"
)

// SetLocationOrder sets a shop's default location order on the holdfast
// side only: the legacy store has no locations to allocate across.
func (e *Engine) SetLocationOrder(ctx context.Context, shopID int64, locations []int64) error {
	return e.hf.SetLocationOrder(ctx, shopID, locations)
}

// LocationOrder reads a shop's default location order from the holdfast
// side only.
func (e *Engine) LocationOrder(ctx context.Context, shopID int64) ([]int64, error) {
	return e.hf.LocationOrder(ctx, shopID)
}

// refuseAllocation refuses a cart with allocated lines (location_id 0):
// the legacy store keeps stock per location and cannot allocate, so the
// two sides would hold different keys (or one would refuse). Nothing is
// written. Allocate on the holdfast engine directly.
func refuseAllocation(p holdfast.ReserveParams) error {
	for i, l := range p.Lines {
		if l.LocationID == 0 {
			return &holdfast.ArgumentError{Field: fmt.Sprintf("lines[%d].location_id", i), Reason: "the shadow layer does not offer allocation; name the location"}
		}
	}
	return nil
}
