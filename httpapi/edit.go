package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// Route names of issue #16's operations.
const (
	routeEdit = "edit_reservation"
)

// RevisionMax bounds an edit's revision: far beyond any hold's edits
// (a hold lives at most its lifetime cap), and exactly representable in
// every JSON reader.
const RevisionMax = 1 << 53

// editRoutes registers the edit route; the partial claim is the claim
// route with a body (claimRoute).
func (s *Server) editRoutes() {
	const res = "/v1/shops/{shop_id}/reservations"
	s.handle("PUT "+res+"/{checkout_id}", routeEdit, routeOpts{body: true, scope: ScopeStorefront}, s.edit)
}

// edit serves PUT …/reservations/{checkout_id}: {"revision": n, "lines":
// […], "ttl_seconds": n?}. 200 with the hold as edited, also for a retry of
// the same edit.
func (s *Server) edit(c *call) (int, any, error) {
	id, apiErr := c.checkout()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	p, apiErr := decodeEdit(c.body, s.limits)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	p.ShopID, p.CheckoutID = c.shop, id
	var h *holdfast.Hold
	err := c.do(func(ctx context.Context) (err error) {
		h, err = s.eng.Edit(ctx, p)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromHold(h), nil
}

// claimRoute serves POST …/{checkout_id}/claim: with no body (or {}) a
// claim of every line; with {"lines": […]} a partial claim (ClaimLines)
// that releases the rest.
func (s *Server) claimRoute(c *call) (int, any, error) {
	if decodeEmpty(c.body) == nil {
		return s.lifecycle(c, s.eng.Claim)
	}
	id, apiErr := c.checkout()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	o, apiErr := parseBody(c.body, "lines")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	lines, apiErr := decodeLineList(o, s.limits)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var h *holdfast.Hold
	err := c.do(func(ctx context.Context) (err error) {
		h, err = s.eng.ClaimLines(ctx, c.shop, id, lines)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromHold(h), nil
}

// decodeEdit decodes an edit's body; the engine validates again.
func decodeEdit(body []byte, lim limits) (holdfast.EditParams, *apiError) {
	lim = lim.withDefaults()
	var p holdfast.EditParams
	o, err := parseBody(body, "revision", "lines", "ttl_seconds")
	if err != nil {
		return p, err
	}
	if p.Revision, _, err = o.int64("revision", true, 1, RevisionMax); err != nil {
		return p, err
	}
	if p.Lines, err = decodeLineList(o, lim); err != nil {
		return p, err
	}
	p.TTL, err = o.ttlSeconds(false, lim)
	return p, err
}

// decodeLineList decodes a required "lines" member with a cart's bounds
// (as a reservation's).
func decodeLineList(o *object, lim limits) ([]holdfast.Line, *apiError) {
	lim = lim.withDefaults()
	raw, err := o.raw("lines", true)
	if err != nil {
		return nil, err
	}
	if jsonType(raw) != "an array" {
		return nil, badRequest(CodeWrongType, "lines", "lines must be an array, not %s", jsonType(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest(CodeMalformedJSON, "lines", "invalid array: %s", err.Error())
	}
	switch {
	case len(items) == 0:
		return nil, invalid("lines", "at least one line is required")
	case len(items) > lim.LinesPerCartMax:
		return nil, invalid("lines", "at most %d lines per cart, got %d", lim.LinesPerCartMax, len(items))
	}
	seen := make(map[[2]int64]int, len(items))
	lines := make([]holdfast.Line, len(items))
	for i, item := range items {
		prefix := fmt.Sprintf("lines[%d].", i)
		lo, err := parseObject(item, prefix, "item_id", "location_id", "quantity")
		if err != nil {
			return nil, err
		}
		itemID, _, err := lo.int64("item_id", true, 1, 1<<63-1)
		if err != nil {
			return nil, err
		}
		loc, _, err := lo.int64("location_id", true, 1, 1<<63-1)
		if err != nil {
			return nil, err
		}
		qty, _, err := lo.int64("quantity", true, 1, int64(lim.QuantityMax))
		if err != nil {
			return nil, err
		}
		k := [2]int64{itemID, loc}
		if j, dup := seen[k]; dup {
			return nil, invalid(fmt.Sprintf("lines[%d]", i), "duplicates lines[%d] (item %d at location %d); merge them", j, itemID, loc)
		}
		seen[k] = i
		lines[i] = holdfast.Line{ItemID: itemID, LocationID: loc, Quantity: int(qty)}
	}
	return lines, nil
}

func (ceilingEngine) Edit(context.Context, holdfast.EditParams) (*holdfast.Hold, error) {
	return nil, holdfast.ErrUnavailable
}

func (ceilingEngine) ClaimLines(context.Context, int64, uuid.UUID, []holdfast.Line) (*holdfast.Hold, error) {
	return nil, holdfast.ErrUnavailable
}
