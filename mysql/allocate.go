package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// reserveAllocated is Reserve for a cart with allocated lines (LocationID
// 0), on the plain path only (never the combiner or the sold-out hint,
// whose keys are fixed). One attempt, in one transaction, in the engine's
// lock order (doc.go):
//
//  1. on the slowest level only, every candidate key's lock row in key
//     order, and a refill of each key that has one;
//  2. on the slower levels, the counter rows of every candidate key (and
//     fixed key), in key order (alloc_lock.sql): with those rows locked no
//     reservation is in flight on them; then one sellable read of them;
//  3. the choice (holdfast.ResolveAllocation: per line, the first candidate
//     in priority order that can supply it, or a split), then the usual
//     take of the resolved cart, whose counter rows are all locked already;
//  4. the hold with its resolved lines, then the lines.
//
// The locks follow the key order whatever the candidates' priority order,
// so carts allocating the same items in opposite orders cannot deadlock. A
// shortage the take finds on a chosen key (units in flight on a pool key)
// re-runs the attempt one level slower, then as a retry.
func (c *Client) reserveAllocated(ctx context.Context, outer *sql.Tx, req *reservation, input []holdfast.Line, start time.Time) (*holdfast.Hold, error) {
	own := outer == nil
	var h *holdfast.Hold
	var keys []holdfast.Line
	var beforeSlow func() error
	if own {
		beforeSlow = func() error { return c.refillInline(ctx, req.Shop, keys) }
	}
	err := c.runSlow(ctx, outer, holdfast.RouteReserve, true, beforeSlow, func(tx *sql.Tx, level int) error {
		mode := takeFast
		switch {
		case level == 1 && own:
			mode = takeRetry
		case level > 0:
			mode = takeLocked
		}
		var err error
		h, keys, err = c.allocateOnce(ctx, tx, own, req, input, mode)
		return err
	})
	c.cfg.Observer.Op(holdfast.RouteReserve, engine.Outcome(err, h), time.Since(start))
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (c *Client) allocateOnce(ctx context.Context, tx *sql.Tx, own bool, req *reservation, input []holdfast.Line, mode takeMode) (*holdfast.Hold, []holdfast.Line, error) {
	const route = holdfast.RouteReserve
	// The checkout's in-flight mark before anything else (inflight.go).
	if err := c.markInFlight(ctx, tx, req.Shop, req.Checkout); err != nil {
		return nil, nil, err
	}
	var order []int64
	if holdfast.NeedsLocationOrder(req.Lines) {
		var err error
		if order, err = c.locationOrder(ctx, tx, route, req.Shop); err != nil {
			return nil, nil, err
		}
	}
	lines, err := holdfast.ExpandAllocation(req.Lines, input, order)
	if err != nil {
		return nil, nil, err
	}
	keys := holdfast.AllocationKeys(lines)
	keysRaw, err := json.Marshal(keys)
	if err != nil {
		return nil, keys, err
	}
	var buyerHash []byte
	if req.Buyer != "" {
		// The buyer's lock rows first (the lock order, buyer.go); limits
		// are per item, whatever location allocation picks.
		buyerHash = req.BuyerHash
		over, err := c.enforceBuyer(ctx, tx, own, route, req.Shop, req.Checkout, req.Lines, buyerHash)
		if err != nil {
			return nil, keys, err
		}
		if over != nil {
			h, err := c.existingAllocated(ctx, tx, req)
			if errors.Is(err, holdfast.ErrNotFound) {
				return nil, keys, over
			}
			return h, keys, err
		}
	}
	if mode == takeLocked {
		// Lock rows before buffers, all of them, in key order; each key
		// that has one refilled under it.
		var mine []holdfast.Key
		for _, l := range keys {
			k := holdfast.Key{ShopID: req.Shop, ItemID: l.ItemID, LocationID: l.LocationID}
			ok, err := c.lockKey(ctx, tx, route, k)
			if err != nil {
				return nil, keys, err
			}
			if ok {
				mine = append(mine, k)
			}
		}
		for _, k := range mine {
			if _, err := c.refillKey(ctx, tx, own, route, k, true, 0); err != nil {
				return nil, keys, err
			}
		}
	}
	if mode != takeFast {
		// Lock-free on the fast path: the read can only over-count (units
		// in flight to others), so it never passes over a candidate that
		// could supply a line; an over-counted choice comes up short at
		// the take and goes the slow way.
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "alloc_lock"), string(keysRaw), req.Shop); err != nil {
			return nil, keys, err
		}
	}
	sellable, err := c.sellable(ctx, tx, route, req.Shop, keysRaw)
	if err != nil {
		return nil, keys, err
	}
	resolved, short := holdfast.ResolveAllocation(lines, keys, sellable)
	if len(short) == 0 {
		raw, err := json.Marshal(resolved)
		if err != nil {
			return nil, keys, err
		}
		short, err = c.take(ctx, tx, own, route, req.Shop, resolved, raw, mode)
		if err != nil {
			return nil, keys, err
		}
		if len(short) == 0 {
			h, err := c.createAllocated(ctx, tx, req, resolved, raw)
			if err == nil && buyerHash != nil && !h.Replayed {
				_, err = tx.ExecContext(ctx, c.q(ctx, route, "buyer_tag"), buyerHash, req.Shop, req.Checkout[:])
			}
			return h, keys, err
		}
	}
	// A retry of a reservation made before the stock ran out is answered
	// with its hold, not with sold out.
	h, err := c.existingAllocated(ctx, tx, req)
	if !errors.Is(err, holdfast.ErrNotFound) {
		return h, keys, err
	}
	if resolved != nil && holdfast.AllocatedShort(req.Lines, short) {
		if mode != takeLocked {
			return nil, keys, errSlowPath
		}
		return nil, keys, errRetry
	}
	return nil, keys, &holdfast.InsufficientStockError{Lines: short}
}

// createAllocated creates the hold of an allocated reservation with its
// resolved lines.
func (c *Client) createAllocated(ctx context.Context, tx *sql.Tx, req *reservation, resolved []holdfast.Line, raw []byte) (*holdfast.Hold, error) {
	const route = holdfast.RouteReserve
	id := req.Checkout[:]
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_create"),
		req.Shop, id, string(raw), req.TTL.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now(), req.Shop, id)
	if isDup(err) || (err == nil && rowsAffected(res) == 0) { // 0: the checkout waits (waitlist.go)
		h, err := c.existingAllocated(ctx, tx, req)
		if errors.Is(err, holdfast.ErrNotFound) {
			return nil, errRetry // purged between the insert and this read
		}
		return h, err
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_create"), req.Shop, id); err != nil {
		return nil, err
	}
	h, err := c.readHold(ctx, tx, route, "hold_get", req.Shop, req.Checkout)
	if err != nil {
		return nil, err
	}
	h.Lines = resolved
	return h, nil
}

// existingAllocated answers an allocated Reserve whose checkout already has
// a hold or outcome: a replay when the hold satisfies the request
// (holdfast.AllocationSatisfied), else ErrIdempotencyConflict. ErrNotFound
// means the checkout is new.
func (c *Client) existingAllocated(ctx context.Context, tx *sql.Tx, req *reservation) (*holdfast.Hold, error) {
	h, err := c.readHold(ctx, tx, holdfast.RouteReserve, "hold_get", req.Shop, req.Checkout)
	if errors.Is(err, holdfast.ErrNotFound) {
		// A checkout that waits (or waited) for other lines: allocated
		// lines never wait, so they are other lines (waitlist.go).
		h, err = c.waitOrNotFound(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout, nil)
		if isWaitAnswer(err) {
			return nil, holdfast.ErrIdempotencyConflict
		}
	}
	if err != nil {
		return nil, err
	}
	switch {
	case h.Status == holdfast.StatusClaimed:
		return nil, holdfast.ErrHoldClaimed
	case h.Status == holdfast.StatusReleased:
		return nil, holdfast.ErrHoldReleased
	case h.Status == holdfast.StatusExpired && !h.Claimable:
		return nil, holdfast.ErrHoldExpired
	}
	if !holdfast.AllocationSatisfied(h.Lines, req.Lines) {
		return nil, holdfast.ErrIdempotencyConflict
	}
	if err := c.sameBuyer(ctx, tx, req); err != nil {
		return nil, err
	}
	h.Replayed = true
	return h, errRollback
}

// putLocationOrder sets or clears a shop's default location order
// (driver.Settings).
func (c *Client) putLocationOrder(ctx context.Context, tx *sql.Tx, shopID int64, locations []int64) error {
	const route = holdfast.RouteLocationOrder
	if len(locations) == 0 {
		_, err := tx.ExecContext(ctx, c.q(ctx, route, "location_order_clear"), shopID)
		return err
	}
	raw, err := json.Marshal(locations)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, c.q(ctx, route, "location_order_set"), shopID, string(raw))
	return err
}

func (c *Client) locationOrder(ctx context.Context, tx *sql.Tx, route string, shop int64) ([]int64, error) {
	var raw []byte
	err := tx.QueryRowContext(ctx, c.q(ctx, route, "location_order_get"), shop).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return []int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []int64{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}
