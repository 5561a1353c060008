package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// Error codes. Each response error carries one; docs/API.md and
// openapi.json list them with their statuses.
const (
	CodeMalformedJSON       = "malformed_json"         // 400: the body is not one JSON value
	CodeUnknownField        = "unknown_field"          // 400
	CodeMissingField        = "missing_field"          // 400
	CodeWrongType           = "wrong_type"             // 400: a member or path segment of the wrong JSON type
	CodeInvalidCursor       = "invalid_cursor"         // 400: a listing's cursor of another shop, key or filters
	CodeInvalidArgument     = "invalid_argument"       // 422: well-formed, but out of bounds
	CodeUnauthorized        = "unauthorized"           // 401: no, a malformed or an unknown key
	CodeKeyExpired          = "key_expired"            // 401: the key's expiry (or a rotation's grace) has passed
	CodeKeyRevoked          = "key_revoked"            // 401
	CodeForbidden           = "forbidden"              // 403
	CodeNotFound            = "not_found"              // 404: no such checkout
	CodeRouteNotFound       = "route_not_found"        // 404: no such route
	CodeMethodNotAllowed    = "method_not_allowed"     // 405
	CodeBodyTooLarge        = "body_too_large"         // 413
	CodeUnsupportedMedia    = "unsupported_media_type" // 415
	CodeInsufficientStock   = "insufficient_stock"     // 409 (with lines)
	CodeNotStocked          = "not_stocked"            // 409 (with lines): no stock was ever set for any short line's key
	CodeIdempotencyConflict = "idempotency_conflict"   // 409
	CodeHoldClaimed         = "hold_claimed"           // 409
	CodeHoldReleased        = "hold_released"          // 409
	CodeCheckoutWaiting     = "checkout_waiting"       // 409: claim, extend or edit of a checkout waiting for stock (waitlist.go)
	CodeHoldExpired         = "hold_expired"           // 410 (with lines from claim)
	CodeWaitExpired         = "wait_expired"           // 410: the checkout's wait ran out (waitlist.go)
	CodeWaitCancelled       = "wait_cancelled"         // 410: the waiting checkout was released (waitlist.go)
	CodeWaitUnservable      = "wait_unservable"        // 410: the wait can no longer be served (waitlist.go)
	CodeCursorExpired       = "cursor_expired"         // 410 (with oldest_cursor): the events after the feed cursor were purged
	CodeLifetimeExceeded    = "lifetime_exceeded"      // 409
	CodeOverCommitted       = "over_committed"         // 409
	CodeRevisionConflict    = "revision_conflict"      // 409 (with current_revision): an edit of an out-of-date revision
	CodeBuyerLimitExceeded  = "buyer_limit_exceeded"   // 409 (with buyer_limit)
	CodeStockChanged        = "stock_changed"          // 409 (with stock_changed): a compare-and-set stock change met another value
	CodePreordered          = "preordered"             // 409: edit, partial claim or merge of a hold with pre-ordered lines (preorder.go)
	CodeOverloaded          = "overloaded"             // 503 with Retry-After
	CodeUnavailable         = "unavailable"            // 503 with Retry-After
	CodeOutcomeUnknown      = "outcome_unknown"        // 500, not retryable blindly: a stock change's commit was not acknowledged
	CodeSchemaNotCurrent    = "schema_not_current"     // 503 from /readyz
	CodeInternal            = "internal"               // 500
)

// apiError is an error response.
type apiError struct {
	Status     int
	Code       string
	Message    string
	Field      string
	Lines      []holdfast.Shortfall
	RetryAfter int // seconds; 0 is none
	BuyerLimit *holdfast.BuyerLimitError
	cause      error
	// CurrentRevision is the hold's revision, on revision_conflict.
	CurrentRevision int64
	// OldestCursor is the oldest feed cursor still available, on
	// cursor_expired.
	OldestCursor *int64
	// StockChanged is the refused compare-and-set, on stock_changed.
	StockChanged *holdfast.StockChangedError
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

func (e *apiError) Unwrap() error { return e.cause }

func (e *apiError) body() wire.ErrorBody {
	b := wire.ErrorBody{Error: wire.Error{Code: e.Code, Message: e.Message, Field: e.Field, CurrentRevision: e.CurrentRevision, OldestCursor: e.OldestCursor}}
	b.Error.Lines = wire.FromShortfalls(e.Lines)
	if e.BuyerLimit != nil {
		b.Error.Buyer = wire.FromBuyerLimitError(e.BuyerLimit)
	}
	if e.StockChanged != nil {
		b.Error.StockChanged = wire.FromStockChanged(e.StockChanged)
	}
	return b
}

func badRequest(code, field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

func invalid(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidArgument, Field: field, Message: fmt.Sprintf(format, args...)}
}

// engineFields renames the engine's argument names to the API's.
var engineFields = map[string]string{"ttl": "ttl_seconds", "id": "adjustment_id", "wait": "wait_seconds"}

// toAPIError translates an error from the engine (or the key store) into a
// response. Each code has one status; route only chooses the message (an
// expired hold met by claim means the buyer must be refunded).
func toAPIError(route string, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if me := mergeIntoAPIError(err); me != nil { // merge.go
		return me
	}
	var arg *holdfast.ArgumentError
	var short *holdfast.InsufficientStockError
	var exp *holdfast.ExpiredError
	var rev *holdfast.RevisionConflictError
	var cur *holdfast.CursorError
	var gone *holdfast.CursorExpiredError
	e := &apiError{Status: http.StatusConflict, cause: err}
	switch {
	case errors.As(err, &cur):
		return badRequest(CodeInvalidCursor, "cursor", "%s", cur.Reason)
	case errors.As(err, &arg):
		field := arg.Field
		if f, ok := engineFields[field]; ok {
			field = f
		}
		return invalid(field, "%s", arg.Reason)
	case errors.As(err, &short):
		e.Code, e.Message, e.Lines = CodeInsufficientStock, "not enough sellable stock for every line; nothing was held", short.Lines
		if route == routeEdit {
			e.Message = "not enough sellable stock for every new line; the hold is unchanged"
		}
		if short.NotStocked() {
			// A mistyped item or location id must not read as a sell-out.
			l := short.Lines[0]
			e.Code = CodeNotStocked
			e.Message = fmt.Sprintf("no stock has been set for item %d at location %d in this shop (a mistyped id?); set it with PUT /v1/shops/{shop_id}/inventory/%d/%d first; nothing was held", l.ItemID, l.LocationID, l.ItemID, l.LocationID)
			if len(short.Lines) > 1 {
				e.Message = fmt.Sprintf("no stock has been set for any of the %d short lines' keys in this shop (see lines; a mistyped id?); set their stock first; nothing was held", len(short.Lines))
			}
		}
	case errors.As(err, &rev):
		e.Code, e.CurrentRevision = CodeRevisionConflict, rev.Current
		e.Message = fmt.Sprintf("the hold is at revision %d; read it and edit with revision %d", rev.Current, rev.Current+1)
	case errors.Is(err, holdfast.ErrIdempotencyConflict):
		e.Code, e.Message = CodeIdempotencyConflict, "the checkout id is already used with other lines; use a new checkout id"
		if route == routeSetStock || route == routeAdjustStock {
			e.Message = "the adjustment id is already used for another change; use a new one"
		}
		if route == routeImportStock {
			e.Message = "the import id is already used for other entries; use a new one"
		}
		if route == routeEdit {
			e.Message = "this revision was already made with other lines or another ttl_seconds; read the hold and edit with its next revision"
		}
	case errors.Is(err, holdfast.ErrPreordered):
		e.Code, e.Message = CodePreordered, "the hold has pre-ordered lines: edits, partial claims and merges are not offered on it; release it and reserve again"
	case errors.Is(err, holdfast.ErrHoldClaimed):
		e.Code, e.Message = CodeHoldClaimed, "the checkout was already claimed"
	case errors.Is(err, holdfast.ErrCheckoutWaiting):
		e.Code, e.Message = CodeCheckoutWaiting, "the checkout is waiting for stock (wait_seconds) and holds nothing yet; read it until it is held, or release it to cancel its wait"
	case errors.Is(err, holdfast.ErrHoldReleased):
		e.Code, e.Message = CodeHoldReleased, "the checkout was already released"
	case errors.Is(err, holdfast.ErrHoldExpired):
		e.Status, e.Code, e.Message = http.StatusGone, CodeHoldExpired, "the hold expired; reserve again with a new checkout id"
		if route == routeClaim {
			e.Message = "the hold expired and its lines could not be taken again; refund the buyer"
			if errors.As(err, &exp) {
				e.Lines = exp.Lines
			}
		}
	case errors.As(err, &gone):
		e.Status, e.Code, e.Field, e.OldestCursor = http.StatusGone, CodeCursorExpired, "after", &gone.Oldest
		e.Message = fmt.Sprintf("events %d..%d were purged (older than the event retention); read again with after=%d, the oldest cursor still available", gone.After+1, gone.Oldest, gone.Oldest)
	case errors.Is(err, holdfast.ErrWaitExpired):
		e.Status, e.Code, e.Message = http.StatusGone, CodeWaitExpired, "the checkout's wait ran out before its cart could be held; nothing is held: reserve again with a new checkout id"
	case errors.Is(err, holdfast.ErrWaitCancelled):
		e.Status, e.Code, e.Message = http.StatusGone, CodeWaitCancelled, "the checkout's wait was cancelled by its release; nothing is held and nothing will be"
	case errors.Is(err, holdfast.ErrWaitUnservable):
		e.Status, e.Code, e.Message = http.StatusGone, CodeWaitUnservable, "the checkout's wait ended: its cart asks more of a key than the key's available stock, so it could never be served; nothing is held: reserve what is sellable under a new checkout id"
	case dropAPIError(err) != nil: // drop.go
		return dropAPIError(err)
	case errors.Is(err, holdfast.ErrLifetimeExceeded):
		e.Code, e.Message = CodeLifetimeExceeded, "the hold cannot be extended past its lifetime cap"
	case errors.Is(err, holdfast.ErrBuyerLimitExceeded):
		return buyerLimitAPIError(err)
	case errors.Is(err, holdfast.ErrStockChanged):
		return stockChangedAPIError(err)
	case errors.Is(err, holdfast.ErrOverCommitted):
		e.Code, e.Message = CodeOverCommitted, "the key's stock was reduced below its holds; release the hold and refund"
	case errors.Is(err, holdfast.ErrNotFound):
		e.Status, e.Code, e.Message = http.StatusNotFound, CodeNotFound, "no hold or outcome is known for this checkout"
	case errors.Is(err, holdfast.ErrOutcomeUnknown):
		e.Status, e.Code, e.Message = http.StatusInternalServerError, CodeOutcomeUnknown,
			"the database did not acknowledge the change: it may or may not have applied; retry with the same checkout id (reservations, claims, releases) or adjustment_id (stock changes), or read the state before changing it again"
	case errors.Is(err, holdfast.ErrUnavailable), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled):
		e.Status, e.Code, e.Message, e.RetryAfter = http.StatusServiceUnavailable, CodeUnavailable,
			"the database is unavailable; retry later (reservations with the same checkout id)", 1
	default:
		e.Status, e.Code, e.Message = http.StatusInternalServerError, CodeInternal, "internal error; see the server log for this request id"
	}
	return e
}

// dbUnreachable reports errors of the database connection itself, met
// outside the engine (key lookups, readiness): the engine maps its own to
// holdfast.ErrUnavailable, and the Store classifies its database's
// (Store.Unreachable).
func (s *Server) dbUnreachable(err error) bool {
	return s.store != nil && s.store.Unreachable(err)
}

// apiErrorOf is toAPIError for an error met by this server: the Store's
// connection errors answer as the engine's (holdfast.ErrUnavailable).
func (s *Server) apiErrorOf(route string, err error) *apiError {
	if err != nil && !errors.Is(err, holdfast.ErrUnavailable) && s.dbUnreachable(err) {
		err = fmt.Errorf("%w: %w", holdfast.ErrUnavailable, err)
	}
	return toAPIError(route, err)
}

// bufPool recycles response buffers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// writeJSON writes v with status. HTML is not escaped: the API serves JSON
// only. Holds, the hot path's answer, are encoded without reflection.
func writeJSON(w http.ResponseWriter, status int, v any) {
	bp := bufPool.Get().(*[]byte)
	buf := (*bp)[:0]
	if h, ok := v.(wire.Hold); ok {
		buf = h.AppendJSON(buf)
	} else {
		bb := bytes.NewBuffer(buf)
		enc := json.NewEncoder(bb)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			status = http.StatusInternalServerError
			bb.Reset()
			bb.WriteString(`{"error":{"code":"internal","message":"cannot encode the response"}}` + "\n")
		}
		buf = bb.Bytes()
	}
	hd := w.Header()
	hd["Content-Type"] = contentTypeJSON
	hd["Content-Length"] = []string{strconv.Itoa(len(buf))}
	w.WriteHeader(status)
	_, _ = w.Write(buf)
	if cap(buf) <= 64<<10 {
		*bp = buf
		bufPool.Put(bp)
	}
}

var contentTypeJSON = []string{"application/json"}

func writeError(w http.ResponseWriter, e *apiError) {
	b := e.body()
	b.Error.RequestID = w.Header().Get("X-Request-Id")
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="holdfast"`)
	}
	if r, ok := w.(*recorder); ok {
		r.code = e.Code
	}
	writeJSON(w, e.Status, b)
}
