package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/holdfast/holdfast/wire"
)

// The pods admin routes (/v1/admin/pods/…) of a server over pods (serve
// --pods-config): they need an admin key; a server without pods answers
// 404 pods_off (an *Error with Code "pods_off").

// Pods lists the pods with their shop counts and health (GET
// /v1/admin/pods).
func (c *Client) Pods(ctx context.Context) ([]wire.Pod, error) {
	var l wire.PodList
	if _, err := c.do(ctx, http.MethodGet, "/v1/admin/pods", nil, &l, true); err != nil {
		return nil, err
	}
	return l.Pods, nil
}

// Placement answers the shop's pod, from the map (GET
// /v1/admin/pods/shops/{shop}); not_found when the shop is nowhere.
func (c *Client) Placement(ctx context.Context, shopID int64) (*wire.Placement, error) {
	var p wire.Placement
	if _, err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/admin/pods/shops/%d", shopID), nil, &p, true); err != nil {
		return nil, err
	}
	return &p, nil
}

// StartMove starts a move of the shop to pod to by method ("", "auto",
// "stream" or "copy") in the server's background (POST
// /v1/admin/pods/moves) and answers the move, running: read it with Move
// until its State is not "running". Refusals (move_running, moves_full,
// move_refused, an unknown pod or shop) changed nothing. A lost answer is
// holdfast.ErrOutcomeUnknown: list the moves (or read the shop's
// placement, whose MoveID names a running move) before starting again.
func (c *Client) StartMove(ctx context.Context, shopID int64, to, method string) (*wire.Move, error) {
	var m wire.Move
	body := wire.MoveRequest{ShopID: shopID, To: to, Method: method}
	if _, err := c.do(ctx, http.MethodPost, "/v1/admin/pods/moves", body, &m, false); err != nil {
		return nil, err
	}
	return &m, nil
}

// Move reads a move the server runs or ran (GET /v1/admin/pods/moves/{id}).
func (c *Client) Move(ctx context.Context, id int64) (*wire.Move, error) {
	var m wire.Move
	if _, err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/admin/pods/moves/%d", id), nil, &m, true); err != nil {
		return nil, err
	}
	return &m, nil
}

// Moves lists the moves the server runs and the last ones that ended,
// newest first (GET /v1/admin/pods/moves).
func (c *Client) Moves(ctx context.Context) ([]wire.Move, error) {
	var l wire.MoveList
	if _, err := c.do(ctx, http.MethodGet, "/v1/admin/pods/moves", nil, &l, true); err != nil {
		return nil, err
	}
	return l.Moves, nil
}

// AbortMove aborts the shop's move (POST /v1/admin/pods/shops/{shop}/abort):
// the server cancels its running move of the shop (undone before its
// switch) and resolves what any move of it left, from the map. Aborting
// again is harmless, so a lost answer may be retried.
func (c *Client) AbortMove(ctx context.Context, shopID int64) (*wire.MoveAbort, error) {
	var a wire.MoveAbort
	if _, err := c.do(ctx, http.MethodPost, fmt.Sprintf("/v1/admin/pods/shops/%d/abort", shopID), nil, &a, true); err != nil {
		return nil, err
	}
	return &a, nil
}
