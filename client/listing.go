package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/holdfast/holdfast"
)

// Holds lists a page of a shop's holds and outcomes, newest first (GET
// /v1/shops/{shop}/holds; see holdfast.HoldQuery). Pass the page's Next as
// the next query's After. A rejected query is an *Error matching
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
	var page struct {
		Holds []struct {
			holdJSON
			Claimable bool `json:"claimable"`
		} `json:"holds"`
		Next string `json:"next"`
	}
	path := fmt.Sprintf("/v1/shops/%d/holds", q.ShopID)
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	if _, err := c.do(ctx, http.MethodGet, path, nil, &page, true); err != nil {
		return nil, err
	}
	out := &holdfast.HoldPage{Holds: make([]holdfast.Hold, len(page.Holds)), Next: page.Next}
	for i, h := range page.Holds {
		out.Holds[i] = *h.hold()
		// On the wire claimable is present only on a lapsed (expired,
		// unswept) hold; a held one is claimable by its status.
		out.Holds[i].Claimable = h.Status == holdfast.StatusHeld || h.Claimable
	}
	return out, nil
}

// Ledger lists a page of a key's ledger, newest first (GET
// /v1/shops/{shop}/inventory/{item}/{location}/ledger; see
// holdfast.LedgerQuery). Pass the page's Next as the next query's After.
func (c *Client) Ledger(ctx context.Context, q holdfast.LedgerQuery) (*holdfast.LedgerPage, error) {
	v := url.Values{}
	if q.After != "" {
		v.Set("cursor", q.After)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var page struct {
		Entries []struct {
			ID             int64     `json:"id"`
			Delta          int       `json:"delta"`
			AvailableAfter int       `json:"available_after"`
			Reason         string    `json:"reason"`
			Reference      string    `json:"reference"`
			CreatedAt      time.Time `json:"created_at"`
		} `json:"entries"`
		Next string `json:"next"`
	}
	path := fmt.Sprintf("/v1/shops/%d/inventory/%d/%d/ledger", q.ShopID, q.ItemID, q.LocationID)
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	if _, err := c.do(ctx, http.MethodGet, path, nil, &page, true); err != nil {
		return nil, err
	}
	out := &holdfast.LedgerPage{Key: q.Key, Entries: make([]holdfast.LedgerEntry, len(page.Entries)), Next: page.Next}
	for i, e := range page.Entries {
		out.Entries[i] = holdfast.LedgerEntry(e)
	}
	return out, nil
}
