package pods

import (
	"context"

	"github.com/holdfast/holdfast"
)

// CancelHolds implements holdfast.Engine on the shop's pod.
func (r *Router) CancelHolds(ctx context.Context, p holdfast.CancelParams) (*holdfast.CancelResult, error) {
	return via(r, ctx, p.ShopID, false, func(e holdfast.Engine) (*holdfast.CancelResult, error) { return e.CancelHolds(ctx, p) })
}

// Audit implements holdfast.Engine on the shop's pod (ShopID 0, the
// deployment's own entries, goes where the router places shop 0).
func (r *Router) Audit(ctx context.Context, q holdfast.AuditQuery) (*holdfast.AuditPage, error) {
	return via(r, ctx, q.ShopID, false, func(e holdfast.Engine) (*holdfast.AuditPage, error) { return e.Audit(ctx, q) })
}
