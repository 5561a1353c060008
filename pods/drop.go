package pods

import (
	"context"

	"github.com/holdfast/holdfast"
)

// SetDrop implements holdfast.Engine on the shop's pod (placing an
// unassigned shop, as the other settings do).
func (r *Router) SetDrop(ctx context.Context, p holdfast.DropParams) (*holdfast.Drop, error) {
	return via(r, ctx, p.ShopID, true, func(e holdfast.Engine) (*holdfast.Drop, error) { return e.SetDrop(ctx, p) })
}

// Drop implements holdfast.Engine on the shop's pod.
func (r *Router) Drop(ctx context.Context, k holdfast.Key) (*holdfast.Drop, error) {
	return via(r, ctx, k.ShopID, false, func(e holdfast.Engine) (*holdfast.Drop, error) { return e.Drop(ctx, k) })
}
