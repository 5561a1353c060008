package shadow

import (
	"context"

	"github.com/holdfast/holdfast"
)

// SetDrop implements holdfast.Engine; holdfast side only (the legacy store
// has no drops).
func (e *Engine) SetDrop(ctx context.Context, p holdfast.DropParams) (*holdfast.Drop, error) {
	return e.hf.SetDrop(ctx, p)
}

// Drop implements holdfast.Engine; holdfast side only.
func (e *Engine) Drop(ctx context.Context, k holdfast.Key) (*holdfast.Drop, error) {
	return e.hf.Drop(ctx, k)
}
