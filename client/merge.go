package client

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// MergeCheckouts moves the held lines of checkout from into checkout into
// (POST /v1/shops/{shop_id}/reservations/{from}/merge) and answers into's
// hold: lines of the same key summed, units never released. A retry is
// safe and answers the same hold. A destination that was claimed,
// released or has expired is an *Error matching holdfast.ErrMergeInto
// (code merge_into_ended, field into); the destination's buyer limit,
// holdfast.ErrBuyerLimitExceeded; a source that ended, its state's error.
func (c *Client) MergeCheckouts(ctx context.Context, shopID int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	return c.holdOp(ctx, http.MethodPost, shopID, from, "/merge", map[string]string{"into": into.String()})
}
