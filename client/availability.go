package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// Availability reads what a buyer could reserve now of q's items, per
// location in allocation order (q.Locations, or the shop's default
// location order): GET /v1/shops/{shop_id}/availability. It is a read,
// retried like one. A rejected query is a *holdfast.ArgumentError naming
// the field, before any request when the client can tell.
func (c *Client) Availability(ctx context.Context, q holdfast.AvailabilityQuery) (*holdfast.Availability, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	v := url.Values{}
	v.Set("items", idsParam(q.Items))
	if len(q.Locations) > 0 {
		v.Set("locations", idsParam(q.Locations))
	}
	var out wire.Availability
	path := fmt.Sprintf("/v1/shops/%d/availability?%s", q.ShopID, v.Encode())
	if _, err := c.do(ctx, http.MethodGet, path, nil, &out, true); err != nil {
		return nil, err
	}
	return out.Availability(), nil
}

// idsParam is ids as a comma-separated query parameter.
func idsParam(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}
