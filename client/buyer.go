package client

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

func buyerLimitPath(shopID, itemID int64) string {
	return fmt.Sprintf("/v1/shops/%d/buyer-limits/%d", shopID, itemID)
}

// SetBuyerLimit sets (creates or replaces) the per-buyer limit of a shop's
// item; the window is sent in whole seconds (rounded up). A retry is safe.
func (c *Client) SetBuyerLimit(ctx context.Context, l holdfast.BuyerLimit) error {
	body := map[string]any{"limit": l.Limit, "window_seconds": int64((l.Window + time.Second - 1) / time.Second)}
	_, err := c.do(ctx, http.MethodPut, buyerLimitPath(l.ShopID, l.ItemID), body, nil, true)
	return err
}

// BuyerLimit reads the per-buyer limit of a shop's item; an *Error matching
// holdfast.ErrNotFound when it has none.
func (c *Client) BuyerLimit(ctx context.Context, shopID, itemID int64) (*holdfast.BuyerLimit, error) {
	var l wire.BuyerLimit
	if _, err := c.do(ctx, http.MethodGet, buyerLimitPath(shopID, itemID), nil, &l, true); err != nil {
		return nil, err
	}
	return l.BuyerLimit(), nil
}

// RemoveBuyerLimit removes the per-buyer limit of a shop's item; removing
// one that does not exist is not an error.
func (c *Client) RemoveBuyerLimit(ctx context.Context, shopID, itemID int64) error {
	_, err := c.do(ctx, http.MethodDelete, buyerLimitPath(shopID, itemID), nil, nil, true)
	return err
}

// SetSafetyStock sets a key's safety stock (0 removes it) and returns its
// level. A retry is safe.
func (c *Client) SetSafetyStock(ctx context.Context, k holdfast.Key, safety int) (*holdfast.Level, error) {
	return c.level(ctx, http.MethodPut, k, "/safety", map[string]any{"safety": safety}, true)
}
