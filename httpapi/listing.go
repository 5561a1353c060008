package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/holdfast/holdfast"
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

// holdPageJSON is a page of holds on the wire.
type holdPageJSON struct {
	Holds []holdJSON `json:"holds"`
	Next  string     `json:"next,omitempty"`
}

// ledgerEntryJSON is one ledger entry on the wire.
type ledgerEntryJSON struct {
	ID             int64     `json:"id"`
	Delta          int       `json:"delta"`
	AvailableAfter int       `json:"available_after"`
	Reason         string    `json:"reason"`
	Reference      string    `json:"reference,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// ledgerPageJSON is a page of a key's ledger on the wire.
type ledgerPageJSON struct {
	ShopID     int64             `json:"shop_id"`
	ItemID     int64             `json:"item_id"`
	LocationID int64             `json:"location_id"`
	Entries    []ledgerEntryJSON `json:"entries"`
	Next       string            `json:"next,omitempty"`
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
	out := holdPageJSON{Holds: make([]holdJSON, len(p.Holds)), Next: p.Next}
	for i := range p.Holds {
		out.Holds[i] = toHoldJSON(&p.Holds[i])
	}
	return http.StatusOK, out, nil
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
	out := ledgerPageJSON{ShopID: k.ShopID, ItemID: k.ItemID, LocationID: k.LocationID, Entries: make([]ledgerEntryJSON, len(p.Entries)), Next: p.Next}
	for i, e := range p.Entries {
		out.Entries[i] = ledgerEntryJSON{ID: e.ID, Delta: e.Delta, AvailableAfter: e.AvailableAfter, Reason: e.Reason, Reference: e.Reference, CreatedAt: e.CreatedAt.UTC()}
	}
	return http.StatusOK, out, nil
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
