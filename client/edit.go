package client

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// EditRequest replaces a held checkout's lines (PUT
// /v1/shops/{shop}/reservations/{checkout_id}).
type EditRequest struct {
	CheckoutID uuid.UUID
	// Revision is the revision the edit makes: the hold's Revision + 1. A
	// retry of the same request (same revision and lines) answers the hold
	// as edited.
	Revision int64
	// Lines are all of the hold's new lines.
	Lines []holdfast.Line
	// TTL, when not zero, moves the expiry to now + TTL (whole seconds,
	// rounded up), capped by the hold's deadline; zero keeps the expiry.
	TTL time.Duration
}

// Edit replaces a held checkout's lines: only the differences are taken or
// given back, all or nothing. A short line is an *Error with code
// insufficient_stock naming it (the hold is unchanged); an out-of-date
// revision an *Error with code revision_conflict (errors.Is
// holdfast.ErrRevisionConflict) carrying CurrentRevision; the current
// revision with other lines or another TTL an *Error with code
// idempotency_conflict. Safe to retry with the same request.
func (c *Client) Edit(ctx context.Context, shopID int64, r EditRequest) (*holdfast.Hold, error) {
	body := map[string]any{"revision": r.Revision, "lines": r.Lines}
	if r.TTL != 0 {
		body["ttl_seconds"] = int64((r.TTL + time.Second - 1) / time.Second)
	}
	return c.holdOp(ctx, http.MethodPut, shopID, r.CheckoutID, "", body)
}

// ClaimLines claims the given quantities of a held checkout and releases
// every other held unit in the same step (the buyer paid for less than was
// held). The answer's Lines are what was claimed, Released what went back.
// A retry answers the same.
func (c *Client) ClaimLines(ctx context.Context, shopID int64, checkoutID uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	return c.holdOp(ctx, http.MethodPost, shopID, checkoutID, "/claim", map[string]any{"lines": lines})
}
