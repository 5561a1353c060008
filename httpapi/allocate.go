package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// Route names of the shop's default location order (allocation, issue #16).
const (
	routeSetLocationOrder = "set_location_order"
	routeGetLocationOrder = "get_location_order"
)

// allocationRoutes registers the shop default location order: the
// candidates of allocated reservation lines that name none.
func (s *Server) allocationRoutes() {
	const p = "/v1/shops/{shop_id}/location-order"
	s.handle("PUT "+p, routeSetLocationOrder, routeOpts{body: true, scope: ScopeInventory}, s.setLocationOrder)
	s.handle("GET "+p, routeGetLocationOrder, routeOpts{}, s.getLocationOrder)
}

func (s *Server) setLocationOrder(c *call) (int, any, error) {
	o, apiErr := parseBody(c.body, "locations")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	raw, apiErr := o.raw("locations", true)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	locs, apiErr := decodeLocationList("locations", raw, holdfast.LocationOrderMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	err := c.do(func(ctx context.Context) error { return s.eng.SetLocationOrder(ctx, c.shop, locs) })
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.LocationOrder{ShopID: c.shop, Locations: locs}, nil
}

func (s *Server) getLocationOrder(c *call) (int, any, error) {
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	var locs []int64
	err := c.do(func(ctx context.Context) (err error) {
		locs, err = s.eng.LocationOrder(ctx, c.shop)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	if locs == nil {
		locs = []int64{}
	}
	return http.StatusOK, wire.LocationOrder{ShopID: c.shop, Locations: locs}, nil
}

// decodeLocationList decodes an array of at most max positive, distinct
// location ids.
func decodeLocationList(field string, raw json.RawMessage, max int) ([]int64, *apiError) {
	if jsonType(raw) != "an array" {
		return nil, badRequest(CodeWrongType, field, "%s must be an array of location ids, not %s", field, jsonType(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest(CodeMalformedJSON, field, "invalid array: %s", err.Error())
	}
	if len(items) > max {
		return nil, invalid(field, "at most %d locations, got %d", max, len(items))
	}
	out := make([]int64, 0, len(items))
	for j, it := range items {
		f := fmt.Sprintf("%s[%d]", field, j)
		v, apiErr := parseInt(f, it, 1, 1<<63-1)
		if apiErr != nil {
			return nil, apiErr
		}
		if k := slices.Index(out, v); k >= 0 {
			return nil, invalid(f, "duplicates %s[%d] (location %d)", field, k, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// decodeAllocation reads a reservation line's candidates and split members:
// only on a line with location_id 0 (allocated by the engine).
func decodeAllocation(lo *object, loc int64) (holdfast.Locations, bool, *apiError) {
	var cands holdfast.Locations
	raw, apiErr := lo.raw("candidates", false)
	if apiErr != nil {
		return cands, false, apiErr
	}
	if raw != nil {
		if loc != 0 {
			return cands, false, invalid(lo.prefix+"candidates", "only with location_id 0 (allocation); a line with a location takes from that location")
		}
		ids, apiErr := decodeLocationList(lo.prefix+"candidates", raw, holdfast.CandidatesPerLineMax)
		if apiErr != nil {
			return cands, false, apiErr
		}
		cands = holdfast.LocationsOf(ids...)
	}
	split := false
	if raw, apiErr = lo.raw("split", false); apiErr != nil {
		return cands, false, apiErr
	}
	if raw != nil {
		if err := json.Unmarshal(raw, &split); err != nil || (string(raw) != "true" && string(raw) != "false") {
			return cands, false, badRequest(CodeWrongType, lo.prefix+"split", "%ssplit must be a boolean, not %s", lo.prefix, jsonType(raw))
		}
		if loc != 0 && split {
			return cands, false, invalid(lo.prefix+"split", "only with location_id 0 (allocation)")
		}
	}
	return cands, split, nil
}

// allocatedTwice rejects an item on a line when an allocated line names it
// too (an allocated item takes exactly one line).
func allocatedTwice(before []holdfast.Line, itemID, loc int64, i int) *apiError {
	for j, o := range before {
		if o.ItemID == itemID && (o.Allocated() || loc == 0) {
			a := j
			if loc == 0 {
				a = i
			}
			return invalid(fmt.Sprintf("lines[%d]", i), "item %d is allocated by lines[%d]; an allocated item takes exactly one line", itemID, a)
		}
	}
	return nil
}

// The ceiling engine (Ceiling) keeps no location order.

func (ceilingEngine) SetLocationOrder(context.Context, int64, []int64) error {
	return holdfast.ErrUnavailable
}
func (ceilingEngine) LocationOrder(context.Context, int64) ([]int64, error) {
	return nil, holdfast.ErrUnavailable
}
