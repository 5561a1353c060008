package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Reserve holds every line of a cart for a checkout, or nothing: in one
// transaction it takes each line's units from its key's buffer and records
// the hold. Lines are processed in (item, location) order whatever order
// they are given in; two lines for the same item and location are
// rejected. Reserve is idempotent on (shop, checkout id): the same checkout
// with the same lines returns the existing hold (Hold.Replayed set), also
// under concurrent retries; the same checkout with other lines is
// ErrIdempotencyConflict. Out of stock is an *InsufficientStockError
// naming every short line.
func (c *Client[TTx]) Reserve(ctx context.Context, p holdfast.ReserveParams) (*holdfast.Hold, error) {
	var zero TTx
	p, err := c.expandReserve(ctx, zero, true, p) // bundle lines become component lines (bundle.go)
	if err != nil {
		c.observe(holdfast.RouteReserve, time.Now(), err, nil)
		return nil, err
	}
	h, err := c.reserve(ctx, zero, true, p)
	h, err = c.dropIfShort(ctx, p, h, err)                 // a key with an open drop (drop.go)
	h, err = c.preorderIfShort(ctx, zero, true, p, h, err) // before waiting: pre-order headroom (preorder.go)
	h, err = c.waitIfShort(ctx, p, h, err)
	return h, c.d.MarkNotStocked(ctx, zero, true, p.ShopID, c.settleLapsed(ctx, err))
}

// ReserveTx is Reserve inside the caller's transaction, in a savepoint: on
// an error the caller's transaction is left as it was, still usable (but
// when the database rolled the whole transaction back — InnoDB on a
// deadlock — the answer is holdfast.ErrTxRolledBack and nothing is
// retried). The hold exists once the caller commits.
func (c *Client[TTx]) ReserveTx(ctx context.Context, tx TTx, p holdfast.ReserveParams) (*holdfast.Hold, error) {
	if err := callerTx(tx); err != nil {
		return nil, err
	}
	if p.Wait != 0 {
		return nil, holdfast.NewArgumentError("wait", "waiting is not offered inside a caller's transaction")
	}
	p, err := c.expandReserve(ctx, tx, false, p) // bundle lines become component lines (bundle.go)
	if err != nil {
		c.observe(holdfast.RouteReserve, time.Now(), err, nil)
		return nil, err
	}
	h, err := c.reserve(ctx, tx, false, p)
	h, err = c.preorderIfShort(ctx, tx, false, p, h, err)
	return h, c.d.MarkNotStocked(ctx, tx, false, p.ShopID, err) // in the caller's transaction: no second connection
}

// ValidateReserve checks p against cfg's bounds and returns it as a
// driver.Reservation: lines sorted, TTL defaulted.
func ValidateReserve(cfg holdfast.Config, p holdfast.ReserveParams) (*driver.Reservation, error) {
	if err := holdfast.ValidateCheckout(p.ShopID, p.CheckoutID); err != nil {
		return nil, err
	}
	ttl := p.TTL
	if ttl == 0 {
		ttl = cfg.HoldTTLDefault
	}
	if ttl < holdfast.HoldTTLMin || ttl > cfg.HoldLifetimeMax {
		return nil, holdfast.NewArgumentError("ttl", "must be between %v and %v", holdfast.HoldTTLMin, cfg.HoldLifetimeMax)
	}
	lines, err := holdfast.ValidateLines(cfg, p.Lines)
	if err != nil {
		return nil, err
	}
	if err := holdfast.ValidateWait(cfg, p.Wait); err != nil {
		return nil, err
	}
	if err := holdfast.ValidateBuyerID(p.BuyerID); err != nil {
		return nil, err
	}
	if err := validateWaitCart(p); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(lines)
	if err != nil {
		return nil, err
	}
	return &driver.Reservation{Shop: p.ShopID, Checkout: p.CheckoutID, Lines: lines, LinesRaw: raw, TTL: ttl, Buyer: p.BuyerID}, nil
}

func (c *Client[TTx]) reserve(ctx context.Context, tx TTx, own bool, p holdfast.ReserveParams) (*holdfast.Hold, error) {
	start := time.Now()
	req, err := ValidateReserve(c.cfg, p)
	if err != nil {
		c.observe(holdfast.RouteReserve, start, err, nil)
		return nil, err
	}
	if req.BuyerHash, err = c.buyerHash(ctx, req); err != nil {
		c.observe(holdfast.RouteReserve, start, err, nil)
		return nil, err
	}
	if holdfast.HasAllocation(req.Lines) {
		return c.reserveAllocated(ctx, tx, own, req, p.Lines, start)
	}
	if own && c.recentlySoldOut(req) {
		if short, err := c.d.SoldOut(ctx, req); err == nil && len(short) > 0 {
			err := &holdfast.InsufficientStockError{Lines: short}
			c.observe(holdfast.RouteReserve, start, err, nil)
			return nil, err
		}
	}
	var h *holdfast.Hold
	combined, doubt := false, false
	// A named buyer takes the plain path, where its limits are checked.
	if own && len(req.Lines) == 1 && req.Buyer == "" {
		k := holdfast.Key{ShopID: req.Shop, ItemID: req.Lines[0].ItemID, LocationID: req.Lines[0].LocationID}
		// A stale or missing cache entry is safe here: a key that is not
		// (or no longer) a batch key has no units in its counter row, the
		// batch refuses it, and the plain path caches its strategy.
		if c.d.Combines(k) {
			// In flight until answered, on either path: the measure of
			// contention that decides whether to combine.
			n := c.inflight.Add(1)
			defer c.inflight.Add(-1)
			h, err, combined, doubt = c.reserveCombined(ctx, k, req, n)
		}
	}
	if !combined {
		// The slow path of the engine's own transactions refills the short
		// buffers in a short transaction of its own, so waiters on a key's
		// lock wait for a refill, not for each other's reservations;
		// inside a caller's transaction it refills under the lock in place.
		var beforeSlow func() error
		if own {
			beforeSlow = func() error { return c.d.RefillInline(ctx, req.Shop, req.Lines) }
		}
		err = c.core.Run(ctx, holdfast.RouteReserve, own, true, beforeSlow, func(level int) error {
			mode := driver.ModeOf(level, own)
			return c.d.Attempt(ctx, tx, own, holdfast.RouteReserve, func(tx TTx) error {
				var err error
				h, err = c.d.ReserveAttempt(ctx, tx, own, req, mode)
				return err
			})
		})
		if doubt && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, holdfast.ErrUnavailable)) {
			// The plain path could not finish the retry of a combined
			// commit that went unacknowledged: the hold may exist.
			err = fmt.Errorf("%w: %s: combined commit not acknowledged, retry failed: %v", holdfast.ErrOutcomeUnknown, holdfast.RouteReserve, err)
		}
	}
	c.observe(holdfast.RouteReserve, start, err, h)
	var ise *holdfast.InsufficientStockError
	switch {
	case errors.As(err, &ise):
		c.noteSoldOut(req.Shop, ise.Lines)
	case err == nil:
		c.noteSold(req)
		if own && !h.Replayed {
			c.noteReserved(h, req.Shop, req.Lines)
		}
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Combinable reports whether a Reserve of p would be served by the
// combiner when others are in flight: a one-line reservation on a batch
// key, as this client last saw the key's strategy (its default for keys it
// has not seen). The HTTP service admits such requests without a
// connection slot of their own: they wait in the combiner.
func (c *Client[TTx]) Combinable(p holdfast.ReserveParams) bool {
	if !p.CombinableShape() {
		return false
	}
	if defs, _ := c.bundleCache.get(p.ShopID); defs[p.Lines[0].ItemID] != nil {
		return false // expanded into its components: the plain path
	}
	return c.d.Combines(holdfast.Key{ShopID: p.ShopID, ItemID: p.Lines[0].ItemID, LocationID: p.Lines[0].LocationID})
}
