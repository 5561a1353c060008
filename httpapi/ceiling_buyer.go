package httpapi

import (
	"context"

	"github.com/holdfast/holdfast"
)

// The ceiling engine answers the buyer-limit and safety-stock operations
// like every other route but Reserve: unavailable.

func (ceilingEngine) SetBuyerLimit(context.Context, holdfast.BuyerLimit) error {
	return holdfast.ErrUnavailable
}
func (ceilingEngine) BuyerLimit(context.Context, int64, int64) (*holdfast.BuyerLimit, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) RemoveBuyerLimit(context.Context, int64, int64) error {
	return holdfast.ErrUnavailable
}
func (ceilingEngine) SetSafetyStock(context.Context, holdfast.Key, int) (*holdfast.Level, error) {
	return nil, holdfast.ErrUnavailable
}
