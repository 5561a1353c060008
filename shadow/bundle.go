package shadow

import (
	"context"

	"github.com/holdfast/holdfast"
)

// SetBundle implements holdfast.Engine; holdfast side only (the legacy
// store has no bundles, so in legacy and shadow modes a bundle's id is an
// unknown item on the answers the shop gets from the legacy side).
func (e *Engine) SetBundle(ctx context.Context, b holdfast.Bundle) error {
	return e.hf.SetBundle(ctx, b)
}

// Bundle implements holdfast.Engine; holdfast side only.
func (e *Engine) Bundle(ctx context.Context, shopID, itemID int64) (*holdfast.Bundle, error) {
	return e.hf.Bundle(ctx, shopID, itemID)
}

// DeleteBundle implements holdfast.Engine; holdfast side only.
func (e *Engine) DeleteBundle(ctx context.Context, shopID, itemID int64) error {
	return e.hf.DeleteBundle(ctx, shopID, itemID)
}
