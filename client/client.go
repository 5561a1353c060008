// Package client is a typed Go client for holdfast's HTTP API (`holdfast
// serve`). Its errors match holdfast's sentinel errors with errors.Is, so
// code written against the library reads the same against the service:
//
//	h, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: id, Lines: lines})
//	switch {
//	case errors.Is(err, holdfast.ErrInsufficientStock):
//		var ce *client.Error
//		errors.As(err, &ce) // ce.Lines names every short line
//	case errors.Is(err, holdfast.ErrUnavailable):
//		// retry later with the same checkout id
//	}
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// responseMax bounds a response body the client reads.
const responseMax = 4 << 20

// Client calls one holdfast server with one API key. It is safe for
// concurrent use.
type Client struct {
	base string
	key  string
	http *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the default http.Client (which has a 30-second
// timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// New returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:8080") authenticating with key.
func New(baseURL, key string, opts ...Option) *Client {
	c := &Client{base: strings.TrimSuffix(baseURL, "/"), key: key, http: &http.Client{Timeout: 30 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Error is an error response of the API. Its Is method matches the holdfast
// sentinel error of its code (insufficient_stock matches
// holdfast.ErrInsufficientStock, not_stocked matches holdfast.ErrNotStocked
// and holdfast.ErrInsufficientStock, unavailable and overloaded match
// holdfast.ErrUnavailable, the input codes match
// holdfast.ErrInvalidArgument, ...).
type Error struct {
	Status  int
	Code    string
	Message string
	Field   string
	// Lines are the short lines of insufficient_stock, and of hold_expired
	// from Claim.
	Lines []holdfast.Shortfall
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration
	// RequestID is the request's id, as in the server's log line.
	RequestID string
	// CurrentRevision is the hold's revision, with revision_conflict: edit
	// again with CurrentRevision + 1.
	CurrentRevision int64
	// BuyerLimit is the item, its limit and what the buyer already holds,
	// with buyer_limit_exceeded.
	BuyerLimit *holdfast.BuyerLimitError
	// OldestCursor is the oldest feed cursor still available, with
	// cursor_expired (Events also answers a *holdfast.CursorExpiredError).
	OldestCursor int64
	// StockChanged is the refused compare-and-set, with stock_changed: the
	// key's available stock now (Current) and, for an import, the entry.
	StockChanged *holdfast.StockChangedError
}

func (e *Error) Error() string {
	s := fmt.Sprintf("holdfast API: %d %s: %s", e.Status, e.Code, e.Message)
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// sentinels maps codes to the holdfast errors they match.
var sentinels = map[string]error{
	"insufficient_stock":   holdfast.ErrInsufficientStock,
	"not_stocked":          holdfast.ErrNotStocked,
	"idempotency_conflict": holdfast.ErrIdempotencyConflict,
	"not_found":            holdfast.ErrNotFound,
	"hold_claimed":         holdfast.ErrHoldClaimed,
	"hold_released":        holdfast.ErrHoldReleased,
	"hold_expired":         holdfast.ErrHoldExpired,
	"wait_expired":         holdfast.ErrWaitExpired,
	"wait_cancelled":       holdfast.ErrWaitCancelled,
	"checkout_waiting":     holdfast.ErrCheckoutWaiting,
	"wait_unservable":      holdfast.ErrWaitUnservable,
	"cursor_expired":       holdfast.ErrCursorExpired,
	"lifetime_exceeded":    holdfast.ErrLifetimeExceeded,
	"over_committed":       holdfast.ErrOverCommitted,
	"revision_conflict":    holdfast.ErrRevisionConflict,
	"buyer_limit_exceeded": holdfast.ErrBuyerLimitExceeded,
	"stock_changed":        holdfast.ErrStockChanged,
	"merge_into_ended":     holdfast.ErrMergeInto,
	"drop_not_open":        holdfast.ErrDropNotOpen, // drop.go
	"drop_entered":         holdfast.ErrDropEntered,
	"drop_full":            holdfast.ErrDropFull,
	"drop_started":         holdfast.ErrDropStarted,
	"preordered":           holdfast.ErrPreordered,
	"unavailable":          holdfast.ErrUnavailable,
	"overloaded":           holdfast.ErrUnavailable,
	"outcome_unknown":      holdfast.ErrOutcomeUnknown,
	"invalid_argument":     holdfast.ErrInvalidArgument,
	"malformed_json":       holdfast.ErrInvalidArgument,
	"unknown_field":        holdfast.ErrInvalidArgument,
	"missing_field":        holdfast.ErrInvalidArgument,
	"wrong_type":           holdfast.ErrInvalidArgument,
	"invalid_cursor":       holdfast.ErrInvalidCursor,
}

// Is reports whether target is the holdfast sentinel error of e's code
// (invalid_cursor matches holdfast.ErrInvalidArgument too, as the engine's
// *holdfast.CursorError does).
func (e *Error) Is(target error) bool {
	if e.Code == "not_stocked" && target == holdfast.ErrInsufficientStock {
		return true // as the library's: a key never stocked is also short
	}
	s, ok := sentinels[e.Code]
	return ok && s == target || e.Code == "invalid_cursor" && target == holdfast.ErrInvalidArgument
}

// ReserveRequest is a reservation. The zero TTL is the server's default (15
// minutes unless configured); otherwise it is sent in whole seconds.
type ReserveRequest struct {
	CheckoutID uuid.UUID
	Lines      []holdfast.Line
	TTL        time.Duration
	// Wait, when not zero, asks to wait up to this long (whole seconds,
	// rounded up) if the cart is short while others hold the units: the
	// answer is then a *holdfast.WaitlistedError (HTTP 202), and Hold
	// reads the checkout until it is held (or holdfast.ErrWaitExpired).
	Wait time.Duration
	// BuyerID names the buyer for per-buyer limits (see
	// holdfast.ReserveParams.BuyerID); empty sends none.
	BuyerID string
}

// Reserve holds every line for the checkout, or nothing. A retry of the
// same request returns the existing hold with Replayed set.
func (c *Client) Reserve(ctx context.Context, shopID int64, r ReserveRequest) (*holdfast.Hold, error) {
	body := map[string]any{"checkout_id": r.CheckoutID.String(), "lines": r.Lines}
	if r.TTL != 0 {
		body["ttl_seconds"] = int64((r.TTL + time.Second - 1) / time.Second)
	}
	if r.Wait != 0 {
		body["wait_seconds"] = int64((r.Wait + time.Second - 1) / time.Second)
	}
	if r.BuyerID != "" {
		body["buyer_id"] = r.BuyerID
	}
	var h wire.Hold
	var w wire.Waiting // waitlist.go
	status, err := c.do(ctx, http.MethodPost, fmt.Sprintf("/v1/shops/%d/reservations", shopID), body, &holdOrWait{&h, &w}, true)
	if err != nil {
		return nil, err
	}
	if status == http.StatusAccepted {
		return nil, w.Waitlisted()
	}
	out := h.Hold()
	out.Replayed = status == http.StatusOK
	return out, nil
}

// Claim turns the checkout's hold into a permanent deduction. A retry
// returns the claimed hold again (with Replayed unknown: false).
func (c *Client) Claim(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	return c.holdOp(ctx, http.MethodPost, shopID, checkoutID, "/claim", nil)
}

// Release gives the checkout's units back. A hold that already expired is
// returned with status expired.
func (c *Client) Release(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	return c.holdOp(ctx, http.MethodPost, shopID, checkoutID, "/release", nil)
}

// Extend moves the hold's expiry to now + ttl (whole seconds, rounded up).
func (c *Client) Extend(ctx context.Context, shopID int64, checkoutID uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	return c.holdOp(ctx, http.MethodPost, shopID, checkoutID, "/extend", map[string]any{"ttl_seconds": int64((ttl + time.Second - 1) / time.Second)})
}

// Hold returns the checkout's hold or outcome.
func (c *Client) Hold(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	return c.holdOp(ctx, http.MethodGet, shopID, checkoutID, "", nil)
}

func (c *Client) holdOp(ctx context.Context, method string, shop int64, id uuid.UUID, suffix string, body any) (*holdfast.Hold, error) {
	var h wire.Hold
	var w wire.Waiting // waitlist.go
	status, err := c.do(ctx, method, fmt.Sprintf("/v1/shops/%d/reservations/%s%s", shop, id, suffix), body, &holdOrWait{&h, &w}, true)
	if err != nil {
		return nil, err
	}
	if status == http.StatusAccepted {
		return nil, w.Waitlisted()
	}
	return h.Hold(), nil
}

// SetAvailable sets a key's available stock. A lost response is
// holdfast.ErrOutcomeUnknown: read the level before retrying.
func (c *Client) SetAvailable(ctx context.Context, k holdfast.Key, available int, reason, reference string) (*holdfast.Level, error) {
	body := map[string]any{"available": available, "reason": reason}
	if reference != "" {
		body["reference"] = reference
	}
	return c.level(ctx, http.MethodPut, k, "", body, false)
}

// Adjust changes a key's available stock by delta. A lost response is
// holdfast.ErrOutcomeUnknown: read the level before retrying.
func (c *Client) Adjust(ctx context.Context, k holdfast.Key, delta int, reason, reference string) (*holdfast.Level, error) {
	body := map[string]any{"delta": delta, "reason": reason}
	if reference != "" {
		body["reference"] = reference
	}
	return c.level(ctx, http.MethodPost, k, "/adjust", body, false)
}

// ChangeStock sets (ch.Set non-nil) or moves (ch.Delta) a key's stock.
// With ch.ID (sent as adjustment_id) a retry is safe: it answers the first
// outcome and applies nothing; without it a lost response is
// holdfast.ErrOutcomeUnknown: read the level before retrying.
func (c *Client) ChangeStock(ctx context.Context, ch holdfast.StockChange) (*holdfast.Level, error) {
	body := map[string]any{"reason": ch.Reason}
	if ch.Reference != "" {
		body["reference"] = ch.Reference
	}
	if ch.ID != "" {
		body["adjustment_id"] = ch.ID
	}
	if ch.ExpectAvailable != nil {
		body["expected_available"] = *ch.ExpectAvailable
	}
	var l *holdfast.Level
	var err error
	if ch.Set != nil {
		body["available"] = *ch.Set
		l, err = c.level(ctx, http.MethodPut, ch.Key, "", body, ch.ID != "")
	} else {
		body["delta"] = ch.Delta
		l, err = c.level(ctx, http.MethodPost, ch.Key, "/adjust", body, ch.ID != "")
	}
	return l, withShop(err, ch.ShopID)
}

// Level returns a key's stock.
func (c *Client) Level(ctx context.Context, k holdfast.Key) (*holdfast.Level, error) {
	return c.level(ctx, http.MethodGet, k, "", nil, true)
}

func (c *Client) level(ctx context.Context, method string, k holdfast.Key, suffix string, body any, idempotent bool) (*holdfast.Level, error) {
	var l wire.Level
	path := fmt.Sprintf("/v1/shops/%d/inventory/%d/%d%s", k.ShopID, k.ItemID, k.LocationID, suffix)
	if _, err := c.do(ctx, method, path, body, &l, idempotent); err != nil {
		return nil, err
	}
	out := l.Level()
	out.Key = k // the key asked, which the answer names too
	return out, nil
}

// Ready reports whether the server's database is reachable and current.
func (c *Client) Ready(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/readyz", nil, nil, true)
	return err
}

// do sends one request and decodes a 2xx answer into out. Transport
// failures are holdfast.ErrUnavailable when retrying is safe (idempotent),
// holdfast.ErrOutcomeUnknown otherwise.
func (c *Client) do(ctx context.Context, method, path string, body, out any, idempotent bool) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		var op *net.OpError
		if idempotent || (errors.As(err, &op) && op.Op == "dial") {
			// Safe to retry, or never sent.
			return 0, fmt.Errorf("%w: %s %s: %w", holdfast.ErrUnavailable, method, path, err)
		}
		return 0, fmt.Errorf("%w: %s %s: %w", holdfast.ErrOutcomeUnknown, method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, responseMax))
	if err != nil {
		if idempotent {
			return 0, fmt.Errorf("%w: reading the response: %w", holdfast.ErrUnavailable, err)
		}
		return 0, fmt.Errorf("%w: reading the response: %w", holdfast.ErrOutcomeUnknown, err)
	}
	if res.StatusCode >= 300 {
		return res.StatusCode, decodeError(res, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return res.StatusCode, fmt.Errorf("holdfast API: %s %s: bad response: %w", method, path, err)
		}
	}
	return res.StatusCode, nil
}

func decodeError(res *http.Response, b []byte) error {
	var eb wire.ErrorBody
	e := &Error{Status: res.StatusCode}
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
		e.Code, e.Message = "http_"+strconv.Itoa(res.StatusCode), strings.TrimSpace(string(b))
		if res.StatusCode == http.StatusServiceUnavailable || res.StatusCode == http.StatusBadGateway || res.StatusCode == http.StatusGatewayTimeout {
			e.Code = "unavailable" // a proxy in front of the service
		}
	} else {
		e.Code, e.Message, e.Field, e.Lines = eb.Error.Code, eb.Error.Message, eb.Error.Field, wire.Shortfalls(eb.Error.Lines)
		e.CurrentRevision = eb.Error.CurrentRevision
		if eb.Error.OldestCursor != nil {
			e.OldestCursor = *eb.Error.OldestCursor
		}
		if b := eb.Error.Buyer; b != nil {
			e.BuyerLimit = b.BuyerLimitError()
		}
		if sc := eb.Error.StockChanged; sc != nil {
			e.StockChanged = sc.StockChangedError(0) // the caller's wrapper fills the shop in
		}
	}
	e.RequestID = res.Header.Get("X-Request-Id")
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}
