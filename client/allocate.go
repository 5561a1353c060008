package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/holdfast/holdfast/wire"
)

// SetLocationOrder sets the shop's default location order: the candidates,
// in priority order, of every reservation line with LocationID 0 that names
// none (holdfast.Line.Candidates). Empty clears it. Setting the same order
// twice is harmless, so it is retried like a read.
func (c *Client) SetLocationOrder(ctx context.Context, shopID int64, locations []int64) error {
	if locations == nil {
		locations = []int64{}
	}
	_, err := c.do(ctx, http.MethodPut, fmt.Sprintf("/v1/shops/%d/location-order", shopID), map[string]any{"locations": locations}, nil, true)
	return err
}

// LocationOrder reads the shop's default location order (empty: none).
func (c *Client) LocationOrder(ctx context.Context, shopID int64) ([]int64, error) {
	var out wire.LocationOrder
	if _, err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/shops/%d/location-order", shopID), nil, &out, true); err != nil {
		return nil, err
	}
	return out.Locations, nil
}
