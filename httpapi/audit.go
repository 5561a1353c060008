package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/holdfast/holdfast"
)

// Route names of the admin cancel and the audit log (issue #30 item 6).
const (
	routeCancelHolds = "cancel_holds"
	routeAudit       = "get_audit"
)

// olderThanMax bounds older_than_seconds: a year.
const olderThanMax = 366 * 24 * 3600

// auditRoutes registers the admin cancel (POST …/holds/cancel) and the
// audit log (GET …/audit). Both are an operator's: they need an admin key,
// as the strategy route does. The request's key, address and request id
// are what the audit log records as who and from where (server.go,
// prepare).
func (s *Server) auditRoutes() {
	s.handle("POST /v1/shops/{shop_id}/holds/cancel", routeCancelHolds, routeOpts{body: true, admin: true}, s.cancelHolds)
	s.handle("GET /v1/shops/{shop_id}/audit", routeAudit, routeOpts{admin: true}, s.audit)
	for _, r := range []string{routeCancelHolds, routeAudit} {
		s.series(r, http.StatusOK, "ok")
		s.series(r, http.StatusServiceUnavailable, CodeOverloaded)
		s.series(r, http.StatusServiceUnavailable, CodeUnavailable)
	}
}

func (s *Server) cancelHolds(c *call) (int, any, error) {
	o, apiErr := parseBody(c.body, "reason", "item_id", "location_id", "buyer_id", "older_than_seconds", "limit", "cursor")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	p := holdfast.CancelParams{ShopID: c.shop}
	if p.Reason, apiErr = o.string("reason", true, holdfast.CancelReasonMaxLen); apiErr != nil {
		return 0, nil, apiErr
	}
	if p.ItemID, _, apiErr = o.int64("item_id", false, 1, 1<<63-1); apiErr != nil {
		return 0, nil, apiErr
	}
	if p.LocationID, _, apiErr = o.int64("location_id", false, 1, 1<<63-1); apiErr != nil {
		return 0, nil, apiErr
	}
	if p.BuyerID, apiErr = o.string("buyer_id", false, holdfast.BuyerIDMaxLen); apiErr != nil {
		return 0, nil, apiErr
	}
	secs, _, apiErr := o.int64("older_than_seconds", false, 1, olderThanMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	p.OlderThan = time.Duration(secs) * time.Second
	limit, _, apiErr := o.int64("limit", false, 1, holdfast.CancelLimitMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	p.Limit = int(limit)
	if p.After, apiErr = o.string("cursor", false, 1024); apiErr != nil {
		return 0, nil, apiErr
	}
	if _, err := p.Validate(); err != nil {
		return 0, nil, err
	}
	var r *holdfast.CancelResult
	err := c.do(func(ctx context.Context) (err error) {
		r, err = s.eng.CancelHolds(ctx, p)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, r, nil
}

func (s *Server) audit(c *call) (int, any, error) {
	v, apiErr := listQuery(c.r, "action", "key", "cursor", "limit")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	q := holdfast.AuditQuery{ShopID: c.shop, Action: v.Get("action"), After: v.Get("cursor")}
	if q.KeyID, apiErr = queryInt(v, "key", 1<<63-1); apiErr != nil {
		return 0, nil, apiErr
	}
	limit, apiErr := queryInt(v, "limit", holdfast.ListLimitMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	q.Limit = int(limit)
	if _, _, err := q.Validate(); err != nil {
		return 0, nil, err
	}
	var p *holdfast.AuditPage
	err := c.do(func(ctx context.Context) (err error) {
		p, err = s.eng.Audit(ctx, q)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, p, nil
}
