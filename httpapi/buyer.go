package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// Per-buyer limits and safety stock (issue #16 items 3 and 4): the routes,
// their wire forms and the buyer_limit_exceeded answer.

// Route names of buyer limits and safety stock.
const (
	routeSetBuyerLimit    = "set_buyer_limit"
	routeGetBuyerLimit    = "get_buyer_limit"
	routeRemoveBuyerLimit = "remove_buyer_limit"
	routeSetSafety        = "set_safety_stock"
)

// WindowSecondsMax bounds a buyer limit's window_seconds on the wire; the
// engine bounds it further by its outcome retention.
const WindowSecondsMax = 366 * 24 * 3600

func (s *Server) buyerRoutes() {
	const lim = "/v1/shops/{shop_id}/buyer-limits/{item_id}"
	const safety = "/v1/shops/{shop_id}/inventory/{item_id}/{location_id}/safety"
	stock := ScopeInventory
	s.handle("PUT "+lim, routeSetBuyerLimit, routeOpts{body: true, scope: stock}, s.setBuyerLimit)
	s.handle("GET "+lim, routeGetBuyerLimit, routeOpts{}, s.getBuyerLimit)
	s.handle("DELETE "+lim, routeRemoveBuyerLimit, routeOpts{optional: true, scope: stock}, s.removeBuyerLimit)
	s.handle("PUT "+safety, routeSetSafety, routeOpts{body: true, scope: stock}, s.setSafety)
}

// buyerLimitAPIError is the 409 buyer_limit_exceeded answer: the item, its
// limit, what the buyer already holds and what was asked.
func buyerLimitAPIError(err error) *apiError {
	e := &apiError{Status: http.StatusConflict, Code: CodeBuyerLimitExceeded, Field: "buyer_id", cause: err,
		Message: "the reservation would take the buyer past the item's per-buyer limit; nothing was held"}
	var ble *holdfast.BuyerLimitError
	if errors.As(err, &ble) {
		e.BuyerLimit = ble
	}
	return e
}

// decodeBuyerID reads a reservation's optional buyer_id.
func decodeBuyerID(o *object) (string, *apiError) {
	id, err := o.string("buyer_id", false, holdfast.BuyerIDMaxLen)
	if err != nil {
		return "", err
	}
	if _, sent := o.members["buyer_id"]; sent && id == "" {
		return "", invalid("buyer_id", "must not be empty (omit it for no buyer)")
	}
	var arg *holdfast.ArgumentError
	if e := holdfast.ValidateBuyerID(id); errors.As(e, &arg) {
		return "", invalid("buyer_id", "%s", arg.Reason)
	}
	return id, nil
}

func (c *call) item() (int64, *apiError) {
	return parseID("item_id", c.r.PathValue("item_id"))
}

// renameWindow gives the engine's "window" argument its wire name.
func renameWindow(err error) error {
	var arg *holdfast.ArgumentError
	if errors.As(err, &arg) && arg.Field == "window" {
		return invalid("window_seconds", "%s", arg.Reason)
	}
	return err
}

func (s *Server) setBuyerLimit(c *call) (int, any, error) {
	item, apiErr := c.item()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	o, apiErr := parseBody(c.body, "limit", "window_seconds")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	lim, _, apiErr := o.int64("limit", true, 0, holdfast.AvailableMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	win, _, apiErr := o.int64("window_seconds", false, 0, WindowSecondsMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	l := holdfast.BuyerLimit{ShopID: c.shop, ItemID: item, Limit: int(lim), Window: time.Duration(win) * time.Second}
	err := c.do(func(ctx context.Context) error { return s.eng.SetBuyerLimit(ctx, l) })
	if err != nil {
		return 0, nil, renameWindow(err)
	}
	return http.StatusOK, wire.FromBuyerLimit(&l), nil
}

func (s *Server) getBuyerLimit(c *call) (int, any, error) {
	item, apiErr := c.item()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	var l *holdfast.BuyerLimit
	err := c.do(func(ctx context.Context) (err error) {
		l, err = s.eng.BuyerLimit(ctx, c.shop, item)
		return err
	})
	if errors.Is(err, holdfast.ErrNotFound) {
		return 0, nil, &apiError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "the item has no per-buyer limit", cause: err}
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromBuyerLimit(l), nil
}

func (s *Server) removeBuyerLimit(c *call) (int, any, error) {
	item, apiErr := c.item()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	err := c.do(func(ctx context.Context) error { return s.eng.RemoveBuyerLimit(ctx, c.shop, item) })
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"shop_id": c.shop, "item_id": item, "removed": true}, nil
}

func (s *Server) setSafety(c *call) (int, any, error) {
	k, apiErr := c.key()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	o, apiErr := parseBody(c.body, "safety")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	n, _, apiErr := o.int64("safety", true, 0, holdfast.AvailableMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var l *holdfast.Level
	err := c.do(func(ctx context.Context) (err error) {
		l, err = s.eng.SetSafetyStock(ctx, k, int(n))
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromLevel(l), nil
}
