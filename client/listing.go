package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// Holds lists a page of a shop's holds and outcomes, newest first (GET
// /v1/shops/{shop}/holds; see holdfast.HoldQuery). Pass the page's Next as
// the next query's After, with the same shop and filters: a cursor of
// another listing is an *Error with code invalid_cursor (matching
// holdfast.ErrInvalidCursor). A rejected query is an *Error matching
// holdfast.ErrInvalidArgument, naming the query parameter.
func (c *Client) Holds(ctx context.Context, q holdfast.HoldQuery) (*holdfast.HoldPage, error) {
	v := url.Values{}
	if q.ItemID != 0 {
		v.Set("item", strconv.FormatInt(q.ItemID, 10))
	}
	if q.LocationID != 0 {
		v.Set("location", strconv.FormatInt(q.LocationID, 10))
	}
	if q.Status != "" {
		v.Set("status", string(q.Status))
	}
	if q.After != "" {
		v.Set("cursor", q.After)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var page wire.HoldPage
	path := fmt.Sprintf("/v1/shops/%d/holds", q.ShopID)
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	if _, err := c.do(ctx, http.MethodGet, path, nil, &page, true); err != nil {
		return nil, err
	}
	return page.HoldPage(), nil
}

// Ledger lists a page of a key's ledger, newest first (GET
// /v1/shops/{shop}/inventory/{item}/{location}/ledger; see
// holdfast.LedgerQuery). Pass the page's Next as the next query's After,
// for the same key (another key's cursor is invalid_cursor).
func (c *Client) Ledger(ctx context.Context, q holdfast.LedgerQuery) (*holdfast.LedgerPage, error) {
	v := url.Values{}
	if q.After != "" {
		v.Set("cursor", q.After)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var page wire.LedgerPage
	path := fmt.Sprintf("/v1/shops/%d/inventory/%d/%d/ledger", q.ShopID, q.ItemID, q.LocationID)
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	if _, err := c.do(ctx, http.MethodGet, path, nil, &page, true); err != nil {
		return nil, err
	}
	out := page.LedgerPage()
	out.Key = q.Key // the key asked, which the answer names too
	return out, nil
}
