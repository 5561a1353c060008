package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// Pre-orders (issue #30 item 2): a key's pre-order cap and expected date,
// set and read beside its safety stock. Held answers mark pre-ordered
// lines (wire.Line.Preordered, ExpectedAt).

// Route names of pre-orders.
const (
	routeSetPreorder = "set_preorder"
	routeGetPreorder = "get_preorder"
)

func (s *Server) preorderRoutes() {
	const pre = "/v1/shops/{shop_id}/inventory/{item_id}/{location_id}/preorder"
	s.handle("PUT "+pre, routeSetPreorder, routeOpts{body: true, scope: ScopeInventory}, s.setPreorder)
	s.handle("GET "+pre, routeGetPreorder, routeOpts{}, s.getPreorder)
}

// preorderJSON is a key's pre-order setting and counts on the wire.
type preorderJSON struct {
	ShopID     int64      `json:"shop_id"`
	ItemID     int64      `json:"item_id"`
	LocationID int64      `json:"location_id"`
	Cap        int        `json:"cap"`
	ExpectedAt *wire.Time `json:"expected_at,omitempty"`
	Held       int        `json:"held"`
	Owed       int        `json:"owed"`
	Headroom   int        `json:"headroom"`
}

func fromPreorder(p *holdfast.Preorder) preorderJSON {
	out := preorderJSON{ShopID: p.ShopID, ItemID: p.ItemID, LocationID: p.LocationID, Cap: p.Cap, Held: p.Held, Owed: p.Owed, Headroom: p.Headroom}
	if !p.ExpectedAt.IsZero() {
		out.ExpectedAt = &wire.Time{Time: p.ExpectedAt.UTC()}
	}
	return out
}

// setPreorder: {"cap": n, "expected_at": RFC 3339} (expected_at required
// with a positive cap; cap 0 turns pre-orders off).
func (s *Server) setPreorder(c *call) (int, any, error) {
	k, apiErr := c.key()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	o, apiErr := parseBody(c.body, "cap", "expected_at")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	n, _, apiErr := o.int64("cap", true, 0, holdfast.PreorderCapMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	at, apiErr := o.string("expected_at", false, 64)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	p := holdfast.Preorder{Key: k, Cap: int(n)}
	if at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return 0, nil, invalid("expected_at", "must be an RFC 3339 time")
		}
		p.ExpectedAt = t
	}
	var got *holdfast.Preorder
	err := c.do(func(ctx context.Context) (err error) {
		got, err = s.eng.SetPreorder(ctx, p)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, fromPreorder(got), nil
}

func (s *Server) getPreorder(c *call) (int, any, error) {
	k, apiErr := c.key()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var got *holdfast.Preorder
	err := c.do(func(ctx context.Context) (err error) {
		got, err = s.eng.Preorder(ctx, k)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, fromPreorder(got), nil
}
