package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// Route names of the listings.
const (
	routeListHolds = "list_holds"
	routeLedger    = "get_ledger"
)

// listingRoutes registers the read-only listings (any scope: like reading a
// key's stock, reading what happened needs no write scope).
func (s *Server) listingRoutes() {
	s.handle("GET /v1/shops/{shop_id}/holds", routeListHolds, routeOpts{}, s.listHolds)
	s.handle("GET /v1/shops/{shop_id}/inventory/{item_id}/{location_id}/ledger", routeLedger, routeOpts{}, s.ledger)
	for _, r := range []string{routeListHolds, routeLedger} {
		s.series(r, http.StatusOK, "ok")
		s.series(r, http.StatusServiceUnavailable, CodeOverloaded)
		s.series(r, http.StatusServiceUnavailable, CodeUnavailable)
	}
}

// listQuery reads a listing's query string: only the parameters in allowed,
// each at most once.
func listQuery(r *http.Request, allowed ...string) (url.Values, *apiError) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest(CodeWrongType, "", "malformed query string: %v", err)
	}
	for name, vals := range v {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			return nil, badRequest(CodeUnknownField, name, "unknown query parameter %q (allowed: %v)", name, allowed)
		}
		if len(vals) > 1 {
			return nil, badRequest(CodeWrongType, name, "query parameter %q given %d times", name, len(vals))
		}
	}
	return v, nil
}

// queryInt reads an optional positive integer parameter (0 when absent).
func queryInt(v url.Values, name string, most int64) (int64, *apiError) {
	s, ok := v[name]
	if !ok {
		return 0, nil
	}
	n, apiErr := parseID(name, s[0])
	if apiErr != nil {
		return 0, apiErr
	}
	if n > most {
		return 0, invalid(name, "must be between 1 and %d", most)
	}
	return n, nil
}

func (s *Server) listHolds(c *call) (int, any, error) {
	v, apiErr := listQuery(c.r, "item", "location", "status", "cursor", "limit")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	q := holdfast.HoldQuery{ShopID: c.shop, Status: holdfast.Status(v.Get("status")), After: v.Get("cursor")}
	if q.ItemID, apiErr = queryInt(v, "item", 1<<63-1); apiErr != nil {
		return 0, nil, apiErr
	}
	if q.LocationID, apiErr = queryInt(v, "location", 1<<63-1); apiErr != nil {
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
	var p *holdfast.HoldPage
	err := c.do(func(ctx context.Context) (err error) {
		p, err = s.eng.Holds(ctx, q)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromHoldPage(p), nil
}

func (s *Server) ledger(c *call) (int, any, error) {
	k := holdfast.Key{ShopID: c.shop}
	var apiErr *apiError
	if k.ItemID, apiErr = parseID("item_id", c.r.PathValue("item_id")); apiErr != nil {
		return 0, nil, apiErr
	}
	if k.LocationID, apiErr = parseID("location_id", c.r.PathValue("location_id")); apiErr != nil {
		return 0, nil, apiErr
	}
	v, apiErr := listQuery(c.r, "cursor", "limit")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	limit, apiErr := queryInt(v, "limit", holdfast.ListLimitMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	q := holdfast.LedgerQuery{Key: k, After: v.Get("cursor"), Limit: int(limit)}
	if _, _, err := q.Validate(); err != nil {
		return 0, nil, err
	}
	var p *holdfast.LedgerPage
	err := c.do(func(ctx context.Context) (err error) {
		p, err = s.eng.Ledger(ctx, q)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromLedgerPage(p), nil
}

// The ceiling answers no listing: it stores nothing.

func (ceilingEngine) Holds(context.Context, holdfast.HoldQuery) (*holdfast.HoldPage, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) Ledger(context.Context, holdfast.LedgerQuery) (*holdfast.LedgerPage, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) Keys(context.Context, holdfast.KeyQuery) ([]holdfast.Level, error) {
	return nil, holdfast.ErrUnavailable
}
