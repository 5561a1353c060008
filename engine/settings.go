package engine

import (
	"context"

	"github.com/holdfast/holdfast"
)

// SetBuyerLimit sets a shop's per-buyer limit of an item: a buyer (by
// ReserveParams.BuyerID) may hold and buy at most Limit units of it per
// Window.
func (c *Client[TTx]) SetBuyerLimit(ctx context.Context, l holdfast.BuyerLimit) error {
	if err := validateBuyerLimit(l, c.cfg.OutcomeRetention); err != nil {
		return err
	}
	var zero TTx
	return c.run(ctx, zero, true, holdfast.RouteAdjust, true, func(tx TTx) error {
		return c.d.PutBuyerLimit(ctx, tx, l)
	})
}

// BuyerLimit reads the per-buyer limit of a shop's item; ErrNotFound when
// it has none.
func (c *Client[TTx]) BuyerLimit(ctx context.Context, shopID, itemID int64) (*holdfast.BuyerLimit, error) {
	if err := validateBuyerLimit(holdfast.BuyerLimit{ShopID: shopID, ItemID: itemID}, c.cfg.OutcomeRetention); err != nil {
		return nil, err
	}
	var zero TTx
	var l *holdfast.BuyerLimit
	err := c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		l, err = c.d.GetBuyerLimit(ctx, tx, shopID, itemID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// RemoveBuyerLimit removes the per-buyer limit of a shop's item; removing
// one that does not exist is not an error.
func (c *Client[TTx]) RemoveBuyerLimit(ctx context.Context, shopID, itemID int64) error {
	if err := validateBuyerLimit(holdfast.BuyerLimit{ShopID: shopID, ItemID: itemID}, c.cfg.OutcomeRetention); err != nil {
		return err
	}
	var zero TTx
	return c.run(ctx, zero, true, holdfast.RouteAdjust, true, func(tx TTx) error {
		return c.d.DeleteBuyerLimit(ctx, tx, shopID, itemID)
	})
}

// SetLocationOrder sets a shop's default location order: the candidates,
// in priority order, of allocated lines that name none (empty clears it).
func (c *Client[TTx]) SetLocationOrder(ctx context.Context, shopID int64, locations []int64) error {
	if err := holdfast.ValidateLocationOrder(shopID, locations); err != nil {
		return err
	}
	var zero TTx
	return c.run(ctx, zero, true, holdfast.RouteLocationOrder, true, func(tx TTx) error {
		return c.d.PutLocationOrder(ctx, tx, shopID, locations)
	})
}

// LocationOrder reads a shop's default location order (empty when none is
// set).
func (c *Client[TTx]) LocationOrder(ctx context.Context, shopID int64) ([]int64, error) {
	if shopID <= 0 {
		return nil, holdfast.NewArgumentError("shop_id", "must be a positive integer")
	}
	var zero TTx
	var out []int64
	err := c.run(ctx, zero, true, holdfast.RouteLocationOrder, true, func(tx TTx) error {
		var err error
		out, err = c.d.GetLocationOrder(ctx, tx, shopID)
		return err
	})
	return out, err
}
