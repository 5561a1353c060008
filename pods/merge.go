package pods

import (
	"context"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// MergeCheckouts implements holdfast.Engine on the shop's pod (both
// checkouts are the shop's, so they live on the same pod).
func (r *Router) MergeCheckouts(ctx context.Context, shopID int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) (*holdfast.Hold, error) { return e.MergeCheckouts(ctx, shopID, from, into) })
}
