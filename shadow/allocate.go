package shadow

import "context"

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
