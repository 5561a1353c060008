package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Edit replaces a held checkout's lines atomically, moving only the
// differences, and is idempotent on the revision it makes (see
// holdfast.EditParams). A checkout that is waiting is ErrCheckoutWaiting.
func (c *Client[TTx]) Edit(ctx context.Context, p holdfast.EditParams) (*holdfast.Hold, error) {
	var zero TTx
	return OrWait(c, ctx, p.ShopID, p.CheckoutID, func() (*holdfast.Hold, error) { return c.edit(ctx, zero, true, p) })
}

// EditTx is Edit inside the caller's transaction, in a savepoint: on an
// error the caller's transaction is left as it was. The edit takes effect
// once the caller commits.
func (c *Client[TTx]) EditTx(ctx context.Context, tx TTx, p holdfast.EditParams) (*holdfast.Hold, error) {
	if err := callerTx(tx); err != nil {
		return nil, err
	}
	return c.edit(ctx, tx, false, p)
}

func (c *Client[TTx]) edit(ctx context.Context, tx TTx, own bool, p holdfast.EditParams) (*holdfast.Hold, error) {
	start := time.Now()
	p, err := c.expandEdit(ctx, tx, own, p) // bundle lines become component lines (bundle.go)
	if err != nil {
		c.observe(holdfast.RouteEdit, start, err, nil)
		return nil, err
	}
	lines, err := holdfast.ValidateEdit(c.cfg, p)
	if err != nil {
		c.observe(holdfast.RouteEdit, start, err, nil)
		return nil, err
	}
	raw, err := json.Marshal(lines)
	if err != nil {
		return nil, err
	}
	var h *holdfast.Hold
	// grow is the last attempt's extra units: what the slow path refills.
	var grow []holdfast.Line
	var beforeSlow func() error
	if own {
		beforeSlow = func() error { return c.d.RefillInline(ctx, p.ShopID, grow) }
	}
	err = c.core.Run(ctx, holdfast.RouteEdit, own, true, beforeSlow, func(level int) error {
		mode := driver.ModeOf(level, own)
		return c.d.Attempt(ctx, tx, own, holdfast.RouteEdit, func(tx TTx) error {
			var err error
			if err := c.refusePreordered(ctx, tx, p.ShopID, p.CheckoutID); err != nil {
				return err // preorder.go
			}
			h, grow, err = c.d.EditAttempt(ctx, tx, own, p, lines, raw, mode)
			return err
		})
	})
	c.observe(holdfast.RouteEdit, start, err, h)
	if err != nil {
		return nil, err
	}
	if own && !h.Replayed {
		c.noteChanged(p.ShopID, grow)
		if p.TTL > 0 {
			c.noteHold(h) // a moved expiry
		}
	}
	return h, nil
}

// ClaimLines claims part of a held checkout — want's lines, at most what
// each line holds — and releases the rest, in one transaction; idempotent
// on the same lines.
func (c *Client[TTx]) ClaimLines(ctx context.Context, shopID int64, checkoutID uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	var zero TTx
	return OrWait(c, ctx, shopID, checkoutID, func() (*holdfast.Hold, error) {
		return c.claimLines(ctx, zero, true, shopID, checkoutID, lines)
	})
}

// ClaimLinesTx is ClaimLines inside the caller's transaction (in a
// savepoint), so the application's order row and the claim commit together.
func (c *Client[TTx]) ClaimLinesTx(ctx context.Context, tx TTx, shopID int64, checkoutID uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	if err := callerTx(tx); err != nil {
		return nil, err
	}
	return c.claimLines(ctx, tx, false, shopID, checkoutID, lines)
}

func (c *Client[TTx]) claimLines(ctx context.Context, tx TTx, own bool, shop int64, checkout uuid.UUID, in []holdfast.Line) (*holdfast.Hold, error) {
	start := time.Now()
	want, err := holdfast.ValidateClaimLines(c.cfg, shop, checkout, in)
	if err != nil {
		c.observe(holdfast.RouteClaim, start, err, nil)
		return nil, err
	}
	var h *holdfast.Hold
	err = c.run(ctx, tx, own, holdfast.RouteClaim, true, func(tx TTx) error {
		var err error
		if err := c.refusePreordered(ctx, tx, shop, checkout); err != nil {
			return err // preorder.go
		}
		h, err = c.d.ClaimLinesAttempt(ctx, tx, own, shop, checkout, in, want)
		return err
	})
	c.observe(holdfast.RouteClaim, start, err, h)
	if err != nil {
		return nil, err
	}
	if !h.Replayed && h.EndedAt != nil {
		c.cfg.Observer.Claimed(h.EndedAt.Sub(h.CreatedAt))
	}
	return h, nil
}
