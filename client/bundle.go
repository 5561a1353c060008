package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/holdfast/holdfast"
)

func bundlePath(shopID, itemID int64) string {
	return fmt.Sprintf("/v1/shops/%d/bundles/%d", shopID, itemID)
}

// SetBundle defines (or redefines) a shop's bundle item (holdfast.Bundle).
// A refused definition is an *Error with status 4xx naming the field. A
// retry is safe (the last definition wins).
func (c *Client) SetBundle(ctx context.Context, b holdfast.Bundle) error {
	body := map[string]any{"components": b.Components}
	_, err := c.do(ctx, http.MethodPut, bundlePath(b.ShopID, b.ItemID), body, nil, true)
	return err
}

// Bundle reads a shop's bundle definition; an *Error matching
// holdfast.ErrNotFound when the item is not a bundle.
func (c *Client) Bundle(ctx context.Context, shopID, itemID int64) (*holdfast.Bundle, error) {
	var b holdfast.Bundle
	if _, err := c.do(ctx, http.MethodGet, bundlePath(shopID, itemID), nil, &b, true); err != nil {
		return nil, err
	}
	return &b, nil
}

// DeleteBundle removes a shop's bundle definition; removing one that does
// not exist is not an error.
func (c *Client) DeleteBundle(ctx context.Context, shopID, itemID int64) error {
	_, err := c.do(ctx, http.MethodDelete, bundlePath(shopID, itemID), nil, nil, true)
	return err
}
