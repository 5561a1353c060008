package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/wire"
)

// Error codes of the pods admin routes (/v1/admin/pods/...; issue #28
// item 2). The last four are a move's (its error member), never an
// answer's.
const (
	CodePodsOff        = "pods_off"        // 404: serve runs without --pods-config
	CodeMoveRunning    = "move_running"    // 409: a move (or an abort) of the shop runs on this server
	CodeMovesFull      = "moves_full"      // 409: the server runs as many moves as it may
	CodeMoveRefused    = "move_refused"    // 409: a precondition of the move does not hold; nothing changed
	CodeMoveMismatch   = "move_mismatch"   // a move's: the copy did not match the source; undone
	CodeMoveUnresolved = "move_unresolved" // a move's: the switch's outcome is unknown; abort resolves it
	CodeMoveCancelled  = "move_cancelled"  // a move's: aborted or cancelled by shutdown before the switch; undone
	CodeMoveFailed     = "move_failed"     // a move's: another failure; undone before the switch
)

// Route names of the pods admin routes.
const (
	routePodsList      = "pods_list"
	routePodsPlacement = "pods_placement"
	routePodsMove      = "pods_move_start"
	routePodsMoves     = "pods_moves"
	routePodsGetMove   = "pods_move"
	routePodsAbort     = "pods_abort"
)

// podNameMax bounds a pod's name in a request (pods.NameRule).
const podNameMax = 63

// Pods is a deployment over pods as its admin routes need it: the map,
// the router's view of the pods' health, and moves run in the background
// (*pods.Mover is one; serve --pods-config injects it). Implementations
// must be safe for concurrent use.
type Pods interface {
	Pods(ctx context.Context) ([]pods.PodInfo, error)
	Status() []pods.PodStatus
	Placement(ctx context.Context, shopID int64) (pods.Placement, error)
	StartMove(ctx context.Context, shopID int64, to, method string) (pods.MoveState, error)
	MoveByID(id int64) (pods.MoveState, bool)
	Moves() []pods.MoveState
	AbortMove(ctx context.Context, shopID int64) (*pods.AbortReport, *pods.MoveState, error)
}

// podsRoutes registers the operator's routes of a deployment over pods
// (docs/API.md, Pods). They need an admin key; without pods (Config.Pods)
// they answer 404 pods_off.
func (s *Server) podsRoutes() {
	const base = "/v1/admin/pods"
	o := routeOpts{pods: true}
	s.admin("GET "+base, routePodsList, o, s.podsList)
	s.admin("GET "+base+"/shops/{shop_id}", routePodsPlacement, o, s.podsPlacement)
	s.admin("POST "+base+"/moves", routePodsMove, routeOpts{pods: true, body: true}, s.podsStartMove)
	s.admin("GET "+base+"/moves", routePodsMoves, o, s.podsMoves)
	s.admin("GET "+base+"/moves/{move_id}", routePodsGetMove, o, s.podsGetMove)
	s.admin("POST "+base+"/shops/{shop_id}/abort", routePodsAbort, routeOpts{pods: true, optional: true}, s.podsAbort)
}

func (s *Server) podsList(c *call) (int, any, error) {
	if _, apiErr := parseQuery(c.r); apiErr != nil {
		return 0, nil, apiErr
	}
	infos, err := s.cfg.Pods.Pods(c.ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: reading the shard map: %w", holdfast.ErrUnavailable, err)
	}
	status := map[string]pods.PodStatus{}
	for _, st := range s.cfg.Pods.Status() {
		status[st.Name] = st
	}
	out := wire.PodList{Pods: make([]wire.Pod, 0, len(infos))}
	for _, in := range infos {
		p := wire.Pod{Name: in.Name, Shops: in.Shops, AcceptsNew: in.AcceptsNew}
		if st, ok := status[in.Name]; ok {
			p.Configured, p.Up, p.LastError, p.InFlight, p.Refused = true, st.Up, st.LastError, st.InFlight, st.Refused
			if !st.Since.IsZero() {
				since := st.Since.UTC()
				p.Since = &since
			}
		}
		out.Pods = append(out.Pods, p)
	}
	return http.StatusOK, out, nil
}

func (s *Server) podsPlacement(c *call) (int, any, error) {
	pl, err := s.cfg.Pods.Placement(c.ctx, c.shop)
	if err != nil {
		return 0, nil, podsError(err, "shop_id")
	}
	out := wire.Placement{ShopID: pl.ShopID, Pod: pl.Pod, Epoch: pl.Epoch, AssignedAt: pl.AssignedAt.UTC()}
	for _, m := range s.cfg.Pods.Moves() {
		if m.ShopID == c.shop && m.State == pods.MoveStateRunning {
			out.MoveID = m.ID
		}
	}
	return http.StatusOK, out, nil
}

func (s *Server) podsStartMove(c *call) (int, any, error) {
	o, apiErr := parseBody(c.body, "shop", "to", "method")
	if apiErr != nil {
		return 0, nil, apiErr
	}
	shop, _, apiErr := o.int64("shop", true, 1, 1<<63-1)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	to, apiErr := o.string("to", true, podNameMax)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if !pods.ValidName(to) {
		return 0, nil, invalid("to", "a pod's name is %s", pods.NameRule)
	}
	method, apiErr := o.string("method", false, 16)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	switch method {
	case "", "auto":
		method = pods.MethodAuto
	case pods.MethodStream, pods.MethodCopy:
	default:
		return 0, nil, invalid("method", "method %q: want auto, stream or copy", method)
	}
	st, err := s.cfg.Pods.StartMove(c.ctx, shop, to, method)
	if err != nil {
		return 0, nil, podsError(err, "shop")
	}
	return http.StatusAccepted, toWireMove(st), nil
}

func (s *Server) podsMoves(c *call) (int, any, error) {
	if _, apiErr := parseQuery(c.r); apiErr != nil {
		return 0, nil, apiErr
	}
	ms := s.cfg.Pods.Moves()
	out := wire.MoveList{Moves: make([]wire.Move, 0, len(ms))}
	for _, m := range ms {
		out.Moves = append(out.Moves, toWireMove(m))
	}
	return http.StatusOK, out, nil
}

func (s *Server) podsGetMove(c *call) (int, any, error) {
	id, apiErr := parseID("move_id", c.r.PathValue("move_id"))
	if apiErr != nil {
		return 0, nil, apiErr
	}
	st, ok := s.cfg.Pods.MoveByID(id)
	if !ok {
		return 0, nil, &apiError{Status: http.StatusNotFound, Code: CodeNotFound, Field: "move_id",
			Message: fmt.Sprintf("no move %d on this server (moves are kept in its memory: the last %d that ended)", id, pods.MoveRecordsMax)}
	}
	return http.StatusOK, toWireMove(st), nil
}

func (s *Server) podsAbort(c *call) (int, any, error) {
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	rep, cancelled, err := s.cfg.Pods.AbortMove(c.ctx, c.shop)
	if err != nil {
		return 0, nil, podsError(err, "shop_id")
	}
	out := wire.MoveAbort{ShopID: rep.ShopID, Pod: rep.Pod, Discarded: rep.Discarded, Restored: rep.Restored, Accepted: rep.Accepted, Purged: rep.Purged}
	if out.Discarded == nil {
		out.Discarded = []string{}
	}
	if cancelled != nil {
		m := toWireMove(*cancelled)
		out.Cancelled = &m
	}
	return http.StatusOK, out, nil
}

// podsError translates a refusal of the pods admin routes into an answer
// (each changed nothing); shopField names the shop's member or segment.
func podsError(err error, shopField string) error {
	switch {
	case errors.Is(err, pods.ErrUnassigned):
		return &apiError{Status: http.StatusNotFound, Code: CodeNotFound, Field: shopField, Message: "the shop is on no pod: the map has no placement of it", cause: err}
	case errors.Is(err, pods.ErrMoveRunning):
		return &apiError{Status: http.StatusConflict, Code: CodeMoveRunning, Field: shopField, Message: trimPods(err), cause: err}
	case errors.Is(err, pods.ErrMovesFull):
		return &apiError{Status: http.StatusConflict, Code: CodeMovesFull, Message: trimPods(err) + " on this server; start this one when one ends", cause: err}
	case errors.Is(err, pods.ErrMoverStopped):
		return &apiError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "the server is shutting down", RetryAfter: 5, cause: err}
	case errors.Is(err, pods.ErrMoveRefused):
		return &apiError{Status: http.StatusConflict, Code: CodeMoveRefused, Field: "to", Message: trimPods(err), cause: err}
	case errors.Is(err, pods.ErrUnknownPod) && shopField == "shop":
		return &apiError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidArgument, Field: "to", Message: "no such pod on this server: " + trimPods(err), cause: err}
	case errors.Is(err, pods.ErrUnknownPod):
		// The map places the shop on a pod this server is not configured
		// with: an operator's configuration, not the request, is at fault.
		return &apiError{Status: http.StatusConflict, Code: CodeMoveRefused, Message: trimPods(err) + ": the map places the shop on a pod not in this server's pods file", cause: err}
	case errors.Is(err, holdfast.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%w: %w", holdfast.ErrUnavailable, err)
}

// moveErrorCode is the code of a move's failure.
func moveErrorCode(st pods.MoveState) string {
	err := st.Err
	switch {
	case errors.Is(err, pods.ErrMoveUnresolved):
		return CodeMoveUnresolved
	case errors.Is(err, pods.ErrMoveMismatch):
		return CodeMoveMismatch
	case errors.Is(err, pods.ErrMoveRefused):
		return CodeMoveRefused
	case st.Aborted || errors.Is(err, context.Canceled):
		return CodeMoveCancelled
	case errors.Is(err, holdfast.ErrUnavailable):
		return CodeUnavailable
	}
	return CodeMoveFailed
}

func toWireMove(st pods.MoveState) wire.Move {
	method := st.Method
	if method == pods.MethodAuto {
		method = "auto"
	}
	m := wire.Move{ID: st.ID, ShopID: st.ShopID, From: st.From, To: st.To, Method: method, State: st.State, Step: st.Step,
		Aborted: st.Aborted, StartedAt: st.StartedAt.UTC()}
	if !st.EndedAt.IsZero() {
		t := st.EndedAt.UTC()
		m.EndedAt = &t
	}
	if r := st.Report; r != nil {
		m.Report = &wire.MoveReport{Epoch: r.Epoch, Rows: r.Rows, Method: r.Method, StreamMS: wire.MS(r.Stream), FenceMS: wire.MS(r.Fence),
			FenceWaitMS: wire.MS(r.FenceWait), CopyMS: wire.MS(r.Copy), VerifyMS: wire.MS(r.Verify), SwitchMS: wire.MS(r.Switch),
			PurgeMS: wire.MS(r.Purge), Purged: r.Purged}
	}
	if st.Err != nil {
		m.Error = &wire.MoveError{Code: moveErrorCode(st), Message: trimPods(st.Err)}
	}
	return m
}

func trimPods(err error) string { return strings.TrimPrefix(err.Error(), "pods: ") }
