package pods

import (
	"context"

	"github.com/holdfast/holdfast"
)

// SetBundle implements holdfast.Engine on the shop's pod (placing an
// unassigned shop, as the other settings do).
func (r *Router) SetBundle(ctx context.Context, b holdfast.Bundle) error {
	return via0(r, ctx, b.ShopID, true, func(e holdfast.Engine) error { return e.SetBundle(ctx, b) })
}

// Bundle implements holdfast.Engine on the shop's pod.
func (r *Router) Bundle(ctx context.Context, shopID, itemID int64) (*holdfast.Bundle, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) (*holdfast.Bundle, error) { return e.Bundle(ctx, shopID, itemID) })
}

// DeleteBundle implements holdfast.Engine on the shop's pod.
func (r *Router) DeleteBundle(ctx context.Context, shopID, itemID int64) error {
	return via0(r, ctx, shopID, false, func(e holdfast.Engine) error { return e.DeleteBundle(ctx, shopID, itemID) })
}
