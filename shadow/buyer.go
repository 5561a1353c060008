package shadow

import (
	"context"

	"github.com/holdfast/holdfast"
)

// SetBuyerLimit implements holdfast.Engine. Per-buyer limits (and safety
// stock, below) exist on the holdfast side only: the operation goes to
// holdfast whatever the shop's mode; the legacy store has no such notion,
// so in legacy and shadow modes it is not enforced on the answers the shop
// gets from the legacy side.
func (e *Engine) SetBuyerLimit(ctx context.Context, l holdfast.BuyerLimit) error {
	return e.hf.SetBuyerLimit(ctx, l)
}

// BuyerLimit implements holdfast.Engine; holdfast side only.
func (e *Engine) BuyerLimit(ctx context.Context, shopID, itemID int64) (*holdfast.BuyerLimit, error) {
	return e.hf.BuyerLimit(ctx, shopID, itemID)
}

// RemoveBuyerLimit implements holdfast.Engine; holdfast side only.
func (e *Engine) RemoveBuyerLimit(ctx context.Context, shopID, itemID int64) error {
	return e.hf.RemoveBuyerLimit(ctx, shopID, itemID)
}

// SetSafetyStock implements holdfast.Engine; holdfast side only (the
// legacy store keeps no safety stock).
func (e *Engine) SetSafetyStock(ctx context.Context, k holdfast.Key, safety int) (*holdfast.Level, error) {
	return e.hf.SetSafetyStock(ctx, k, safety)
}
