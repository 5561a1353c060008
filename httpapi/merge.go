package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

const routeMerge = "merge_reservation"

// CodeMergeIntoEnded is the 409 answer of a merge whose destination
// checkout was claimed, released or has expired (field "into").
const CodeMergeIntoEnded = "merge_into_ended"

// mergeRoutes registers POST …/reservations/{checkout_id}/merge: the
// checkout's held lines move into the checkout "into" (merge.go, engine).
func (s *Server) mergeRoutes() {
	s.handle("POST /v1/shops/{shop_id}/reservations/{checkout_id}/merge", routeMerge, routeOpts{body: true, scope: ScopeStorefront}, s.mergeRoute)
}

func (s *Server) mergeRoute(c *call) (int, any, error) {
	from, apiErr := c.checkout()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	o, apiErr := parseBody(c.body, "into")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	raw, apiErr := o.string("into", true, 36)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	into, apiErr := parseCheckoutID("into", raw)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if into == from {
		return 0, nil, invalid("into", "must differ from the checkout merged (the path's checkout_id)")
	}
	var h *holdfast.Hold
	err := c.do(func(ctx context.Context) (err error) {
		h, err = s.eng.MergeCheckouts(ctx, c.shop, from, into)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromHold(h), nil
}

// mergeIntoAPIError is the answer for a *holdfast.MergeIntoError; nil for
// other errors.
func mergeIntoAPIError(err error) *apiError {
	var me *holdfast.MergeIntoError
	if !errors.As(err, &me) {
		return nil
	}
	state := "ended"
	switch {
	case errors.Is(me.Err, holdfast.ErrHoldClaimed):
		state = "was claimed"
	case errors.Is(me.Err, holdfast.ErrHoldReleased):
		state = "was released"
	case errors.Is(me.Err, holdfast.ErrHoldExpired):
		state = "expired"
	case errors.Is(me.Err, holdfast.ErrCheckoutWaiting):
		state = "is waiting for stock (wait_seconds)"
	}
	return &apiError{Status: http.StatusConflict, Code: CodeMergeIntoEnded, Field: "into", cause: err,
		Message: fmt.Sprintf("the checkout %s %s and can take no lines; nothing was changed: the merged checkout still holds its lines", me.Into, state)}
}
