package pods

import (
	"context"

	"github.com/holdfast/holdfast"
)

// SetPreorder implements holdfast.Engine on the shop's pod.
func (r *Router) SetPreorder(ctx context.Context, p holdfast.Preorder) (*holdfast.Preorder, error) {
	return via(r, ctx, p.ShopID, true, func(e holdfast.Engine) (*holdfast.Preorder, error) { return e.SetPreorder(ctx, p) })
}

// Preorder implements holdfast.Engine on the shop's pod.
func (r *Router) Preorder(ctx context.Context, k holdfast.Key) (*holdfast.Preorder, error) {
	return via(r, ctx, k.ShopID, false, func(e holdfast.Engine) (*holdfast.Preorder, error) { return e.Preorder(ctx, k) })
}
