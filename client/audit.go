package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/holdfast/holdfast"
)

// cancelRequest is POST …/holds/cancel's body.
type cancelRequest struct {
	Reason     string `json:"reason"`
	ItemID     int64  `json:"item_id,omitempty"`
	LocationID int64  `json:"location_id,omitempty"`
	BuyerID    string `json:"buyer_id,omitempty"`
	OlderThan  int64  `json:"older_than_seconds,omitempty"`
	Limit      int    `json:"limit,omitempty"`
	Cursor     string `json:"cursor,omitempty"`
}

// CancelHolds cancels a shop's held holds in bulk as an admin (POST
// /v1/shops/{shop}/holds/cancel; see holdfast.CancelParams): it needs an
// admin key (else an *Error with status 403). OlderThan is sent in whole
// seconds. Retrying is safe — a retry ends only what is still held — so
// a lost answer is holdfast.ErrUnavailable, not ErrOutcomeUnknown: call
// again, and go on with the answer's Next while More is set.
func (c *Client) CancelHolds(ctx context.Context, p holdfast.CancelParams) (*holdfast.CancelResult, error) {
	body := cancelRequest{Reason: p.Reason, ItemID: p.ItemID, LocationID: p.LocationID, BuyerID: p.BuyerID,
		OlderThan: int64(p.OlderThan.Seconds()), Limit: p.Limit, Cursor: p.After}
	if p.OlderThan > 0 && body.OlderThan == 0 {
		body.OlderThan = 1 // under a second: the least the API takes
	}
	var r holdfast.CancelResult
	if _, err := c.do(ctx, http.MethodPost, fmt.Sprintf("/v1/shops/%d/holds/cancel", p.ShopID), body, &r, true); err != nil {
		return nil, err
	}
	return &r, nil
}

// Audit lists a page of a shop's audit log, newest first (GET
// /v1/shops/{shop}/audit; see holdfast.AuditQuery): it needs an admin key.
// Pass the page's Next as the next query's After, with the same filters.
func (c *Client) Audit(ctx context.Context, q holdfast.AuditQuery) (*holdfast.AuditPage, error) {
	v := url.Values{}
	if q.Action != "" {
		v.Set("action", q.Action)
	}
	if q.KeyID != 0 {
		v.Set("key", strconv.FormatInt(q.KeyID, 10))
	}
	if q.After != "" {
		v.Set("cursor", q.After)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	path := fmt.Sprintf("/v1/shops/%d/audit", q.ShopID)
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var page holdfast.AuditPage
	if _, err := c.do(ctx, http.MethodGet, path, nil, &page, true); err != nil {
		return nil, err
	}
	if page.Entries == nil {
		page.Entries = []holdfast.AuditEntry{}
	}
	return &page, nil
}
