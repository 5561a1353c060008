package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// Fair drops (issue #30 item 7): a key's lottery window. Entering goes
// through the ordinary reserve route (with a buyer_id): in the window it
// answers 202 waiting, as the waitlist does, and GET of the checkout tells
// the outcome after the draw.

// Route names of drops.
const (
	routeSetDrop = "set_drop"
	routeGetDrop = "get_drop"
)

// Error codes of drops (all 409).
const (
	CodeDropNotOpen = "drop_not_open" // a reservation before the key's drop window opens
	CodeDropEntered = "drop_entered"  // the buyer entered the drop under another checkout
	CodeDropFull    = "drop_full"     // the drop has holdfast.DropEntrantsMax entrants
	CodeDropStarted = "drop_started"  // PUT …/drop while the window is open
)

func (s *Server) dropRoutes() {
	const path = "/v1/shops/{shop_id}/inventory/{item_id}/{location_id}/drop"
	s.handle("PUT "+path, routeSetDrop, routeOpts{body: true, scope: ScopeInventory}, s.setDrop)
	s.handle("GET "+path, routeGetDrop, routeOpts{}, s.getDrop)
}

// setDrop is PUT …/drop: {"window_seconds": n, "starts_at": RFC 3339
// (optional: now)}.
func (s *Server) setDrop(c *call) (int, any, error) {
	k, apiErr := c.key()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	o, apiErr := parseBody(c.body, "window_seconds", "starts_at")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	secs, _, apiErr := o.int64("window_seconds", true, int64(holdfast.DropWindowMin/time.Second), int64(holdfast.DropWindowMax/time.Second))
	if apiErr != nil {
		return 0, nil, apiErr
	}
	p := holdfast.DropParams{Key: k, Window: time.Duration(secs) * time.Second}
	start, apiErr := o.string("starts_at", false, 64)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if start != "" {
		t, err := time.Parse(time.RFC3339Nano, start)
		if err != nil {
			return 0, nil, invalid("starts_at", "must be an RFC 3339 time, such as 2026-12-02T15:04:05Z")
		}
		p.StartsAt = t
	}
	var d *holdfast.Drop
	err := c.do(func(ctx context.Context) (err error) {
		d, err = s.eng.SetDrop(ctx, p)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromDrop(d), nil
}

func (s *Server) getDrop(c *call) (int, any, error) {
	k, apiErr := c.key()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	var d *holdfast.Drop
	err := c.do(func(ctx context.Context) (err error) {
		d, err = s.eng.Drop(ctx, k)
		return err
	})
	if errors.Is(err, holdfast.ErrNotFound) {
		return 0, nil, &apiError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "the key has no drop", cause: err}
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromDrop(d), nil
}

// dropAPIError is the answer of a drop's refusals; nil for other errors.
func dropAPIError(err error) *apiError {
	e := &apiError{Status: http.StatusConflict, cause: err}
	var dn *holdfast.DropNotOpenError
	switch {
	case errors.As(err, &dn):
		e.Code, e.Message = CodeDropNotOpen, "the item's drop opens at "+dn.StartsAt.UTC().Format(time.RFC3339Nano)+"; reserve then to enter its lottery"
	case errors.Is(err, holdfast.ErrDropNotOpen):
		e.Code, e.Message = CodeDropNotOpen, "the item's drop has not opened yet"
	case errors.Is(err, holdfast.ErrDropEntered):
		e.Code, e.Message = CodeDropEntered, "this buyer already entered the drop under another checkout; read that checkout"
	case errors.Is(err, holdfast.ErrDropFull):
		e.Code, e.Message = CodeDropFull, "the drop has the most entrants it takes"
	case errors.Is(err, holdfast.ErrDropStarted):
		e.Code, e.Message = CodeDropStarted, "the drop's window is open: it is drawn as set"
	default:
		return nil
	}
	return e
}
