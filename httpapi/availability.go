package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// routeAvailability is the availability read's route name (issue #30).
const routeAvailability = "get_availability"

// availabilityRoutes registers the availability read: what a buyer could
// reserve now, for a product page. Any scope, like reading a key's stock.
func (s *Server) availabilityRoutes() {
	s.handle("GET /v1/shops/{shop_id}/availability", routeAvailability, routeOpts{}, s.availability)
	s.series(routeAvailability, http.StatusOK, "ok")
	s.series(routeAvailability, http.StatusServiceUnavailable, CodeOverloaded)
	s.series(routeAvailability, http.StatusServiceUnavailable, CodeUnavailable)
}

// availability answers GET …/availability?items=1,2[&locations=3,4].
func (s *Server) availability(c *call) (int, any, error) {
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	v, apiErr := listQuery(c.r, "items", "locations")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	q := holdfast.AvailabilityQuery{ShopID: c.shop}
	if _, ok := v["items"]; !ok {
		return 0, nil, badRequest(CodeMissingField, "items", "items is required: a comma-separated list of item ids (at most %d)", holdfast.AvailabilityItemsMax)
	}
	if q.Items, apiErr = idList(v, "items", holdfast.AvailabilityItemsMax); apiErr != nil {
		return 0, nil, apiErr
	}
	if q.Locations, apiErr = idList(v, "locations", holdfast.LocationOrderMax); apiErr != nil {
		return 0, nil, apiErr
	}
	if err := q.Validate(); err != nil {
		return 0, nil, err
	}
	var a *holdfast.Availability
	err := c.do(func(ctx context.Context) (err error) {
		a, err = s.eng.Availability(ctx, q)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromAvailability(a), nil
}

// idList reads an optional query parameter that is a comma-separated list
// of at most most positive ids (nil when absent). Its elements are named
// name[i] in errors.
func idList(v url.Values, name string, most int) ([]int64, *apiError) {
	raw, ok := v[name]
	if !ok {
		return nil, nil
	}
	if raw[0] == "" {
		return nil, badRequest(CodeWrongType, name, "%s must be a comma-separated list of positive integers, not empty", name)
	}
	if n := strings.Count(raw[0], ",") + 1; n > most {
		return nil, invalid(name, "at most %d ids, got %d", most, n)
	}
	parts := strings.Split(raw[0], ",")
	out := make([]int64, len(parts))
	for i, p := range parts {
		id, apiErr := parseID(fmt.Sprintf("%s[%d]", name, i), strings.TrimSpace(p))
		if apiErr != nil {
			return nil, apiErr
		}
		out[i] = id
	}
	return out, nil
}

// The ceiling engine (Ceiling) stores nothing to read availability from.

func (ceilingEngine) Availability(context.Context, holdfast.AvailabilityQuery) (*holdfast.Availability, error) {
	return nil, holdfast.ErrUnavailable
}
