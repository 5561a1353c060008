package shadow

import (
	"context"

	"github.com/holdfast/holdfast"
)

// SetPreorder implements holdfast.Engine; holdfast side only (the legacy
// store keeps no pre-orders).
func (e *Engine) SetPreorder(ctx context.Context, p holdfast.Preorder) (*holdfast.Preorder, error) {
	return e.hf.SetPreorder(ctx, p)
}

// Preorder implements holdfast.Engine; holdfast side only.
func (e *Engine) Preorder(ctx context.Context, k holdfast.Key) (*holdfast.Preorder, error) {
	return e.hf.Preorder(ctx, k)
}
