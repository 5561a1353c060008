package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/jackc/pgx/v5"
)

// reserveAllocated is Reserve for a cart with allocated lines (LocationID
// 0), on the plain path only (never the combiner or the sold-out hint,
// whose keys are fixed). One attempt, in one transaction:
//
//  1. the hold row first (hold_insert.sql, its lines a placeholder): a
//     retry of the same checkout waits there, as for any reservation;
//  2. on the slowest level only, every candidate key's advisory lock in key
//     order, and a refill of each;
//  3. one sellable snapshot of every candidate key (and fixed key); on the
//     slower levels after locking every counter row of them, in key and
//     slot order (alloc_lock.sql): with those rows locked no reservation is
//     in flight on them, so the snapshot is what this attempt can take. The
//     fast path takes no such locks: its lock-free snapshot can only
//     over-count (units in flight to others), never under-count, so it
//     never passes over a candidate that could supply the line; a choice it
//     over-counted comes up short at the take and goes the slow way;
//  4. the choice (ResolveAllocation: per line, the first candidate in
//     priority order that can supply it, or a split), then the take of the
//     resolved cart in key order, like any cart's;
//  5. the hold's resolved lines (alloc_hold_lines.sql, hold_lines_create.sql),
//     on the fast path in the take's round trip.
//
// Locks are taken in the one global order whatever the candidates'
// priority order, so carts allocating the same items in opposite orders
// cannot deadlock. A shortage found by the take on a chosen key (units in
// flight on a pool key) re-runs the attempt one level slower, then as a
// retry: it never reaches the caller as a shortfall of a location that
// allocation picked.
func (c *Client) reserveAllocated(ctx context.Context, b beginner, own bool, req *reservation, input []holdfast.Line, start time.Time) (*holdfast.Hold, error) {
	var h *holdfast.Hold
	var keys []holdfast.Line
	var beforeSlow func() error
	if own {
		beforeSlow = func() error { return c.refillInline(ctx, req.Shop, keys) }
	}
	err := c.runSlow(ctx, b, holdfast.RouteReserve, own, true, beforeSlow, func(tx pgx.Tx, level int) error {
		mode := takeFast
		switch {
		case level == 1 && own:
			mode = takeRetry
		case level > 0:
			mode = takeLocked
		}
		if req.Buyer != "" {
			// A named buyer's locks come after the hold row and before any
			// buffer: only this level takes its hold row on its own first.
			mode = takeLocked
		}
		var err error
		h, keys, err = c.allocateOnce(ctx, tx, req, input, mode)
		return err
	})
	c.cfg.Observer.Op(holdfast.RouteReserve, engine.Outcome(err, h), time.Since(start))
	if err != nil {
		return nil, err
	}
	if own && !h.Replayed {
		c.noteReserved(req.Shop, h.Lines)
		c.noteHold(h)
	}
	return h, nil
}

// allocateOnce is one attempt of reserveAllocated. It also returns the
// candidate keys, for the refill between the fast and the slow attempt.
func (c *Client) allocateOnce(ctx context.Context, tx pgx.Tx, req *reservation, input []holdfast.Line, mode takeMode) (*holdfast.Hold, []holdfast.Line, error) {
	const route = holdfast.RouteReserve
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
	items, locs, _ := columns(keys)
	h := &holdfast.Hold{CheckoutID: req.Checkout, ShopID: req.Shop, Status: holdfast.StatusHeld, Claimable: true, Revision: 1}
	insert := []any{req.Checkout, req.Shop, "[]", req.TTL.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now()}

	var sellable []int
	if mode == takeLocked {
		err := tx.QueryRow(ctx, c.q(ctx, route, "hold_insert"), insert...).Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline)
		if errors.Is(err, pgx.ErrNoRows) {
			h, err := c.existingAllocated(ctx, tx, req)
			return h, keys, err
		}
		if err != nil {
			return nil, keys, err
		}
		if req.Buyer != "" {
			// After the hold row, before any key lock (the lock order).
			if err := c.checkBuyer(ctx, tx, req); err != nil {
				return nil, keys, err
			}
		}
		// Key locks before buffers, all of them, in key order; each key
		// refilled under its lock.
		for _, k := range keys {
			if _, err := tx.Exec(ctx, c.q(ctx, route, "lock_key"), keyHash(holdfast.Key{ShopID: req.Shop, ItemID: k.ItemID, LocationID: k.LocationID})); err != nil {
				return nil, keys, err
			}
		}
		for _, k := range keys {
			if err := c.refillKey(ctx, tx, route, holdfast.Key{ShopID: req.Shop, ItemID: k.ItemID, LocationID: k.LocationID}); err != nil {
				return nil, keys, err
			}
		}
		if _, err := tx.Exec(ctx, c.q(ctx, route, "alloc_lock"), req.Shop, items, locs); err != nil {
			return nil, keys, err
		}
		if sellable, err = c.sellable(ctx, tx, route, req.Shop, keys); err != nil {
			return nil, keys, err
		}
	} else {
		// One round trip: hold row, counter locks (not on the fast
		// path), snapshot.
		batch := &pgx.Batch{}
		batch.Queue(c.q(ctx, route, "hold_insert"), insert...)
		if mode != takeFast {
			batch.Queue(c.q(ctx, route, "alloc_lock"), req.Shop, items, locs)
		}
		batch.Queue(c.q(ctx, route, "sellable"), req.Shop, items, locs)
		br := tx.SendBatch(ctx, batch)
		err := br.QueryRow().Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline)
		existing := errors.Is(err, pgx.ErrNoRows)
		if err != nil && !existing {
			br.Close()
			return nil, keys, err
		}
		if mode != takeFast {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return nil, keys, err
			}
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return nil, keys, err
		}
		for rows.Next() {
			var avail, held int
			var waited bool
			if err := rows.Scan(&avail, &held, &waited); err != nil {
				rows.Close()
				br.Close()
				return nil, keys, err
			}
			if waited {
				// The key's units go to its waiters first (waitlist.go):
				// nothing is sellable to this cart there.
				avail = 0
			}
			sellable = append(sellable, max(0, avail-held))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			br.Close()
			return nil, keys, err
		}
		if err := br.Close(); err != nil {
			return nil, keys, err
		}
		if existing {
			h, err := c.existingAllocated(ctx, tx, req)
			return h, keys, err
		}
	}

	resolved, short := holdfast.ResolveAllocation(lines, keys, sellable)
	if len(short) > 0 {
		return nil, keys, &holdfast.InsufficientStockError{Lines: short}
	}
	if mode == takeFast {
		h, err := c.allocateFast(ctx, tx, req, h, resolved)
		return h, keys, err
	}
	short, err = c.take(ctx, tx, route, req.Shop, resolved, mode)
	if err != nil {
		return nil, keys, err
	}
	if len(short) > 0 {
		if !holdfast.AllocatedShort(req.Lines, short) {
			return nil, keys, &holdfast.InsufficientStockError{Lines: short}
		}
		if mode != takeLocked {
			return nil, keys, errSlowPath
		}
		return nil, keys, errRetry
	}
	raw, err := json.Marshal(resolved)
	if err != nil {
		return nil, keys, err
	}
	ritems, rlocs, rqtys := columns(resolved)
	batch := &pgx.Batch{}
	batch.Queue(c.q(ctx, route, "alloc_hold_lines"), req.Checkout, req.Shop, string(raw))
	batch.Queue(c.q(ctx, route, "alloc_hold_events"), req.Checkout, req.Shop)
	batch.Queue(c.q(ctx, route, "hold_lines_create"), req.Checkout, req.Shop, ritems, rlocs, rqtys, h.ExpiresAt, h.CreatedAt)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return nil, keys, err
	}
	h.Lines = resolved
	return h, keys, nil
}

// allocateFast takes the resolved lines and writes the hold's lines in one
// round trip: every take (on counter rows this transaction already locked,
// or pool rows it skips when others hold them) and the two writes, which
// the rollback undoes when a take comes up short. The choice was made on
// sellable stock, so a short take means a buffer that needs a refill (or
// pool units in flight): the slow path, never a shortfall.
func (c *Client) allocateFast(ctx context.Context, tx pgx.Tx, req *reservation, h *holdfast.Hold, resolved []holdfast.Line) (*holdfast.Hold, error) {
	const route = holdfast.RouteReserve
	infos, err := c.keyInfos(ctx, tx, route, req.Shop, resolved, false)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(resolved)
	if err != nil {
		return nil, err
	}
	batch := &pgx.Batch{}
	for i, l := range resolved {
		c.queueTake(ctx, batch, route, infos[i].strategy, req.Shop, l)
	}
	items, locs, qtys := columns(resolved)
	batch.Queue(c.q(ctx, route, "alloc_hold_lines"), req.Checkout, req.Shop, string(raw))
	batch.Queue(c.q(ctx, route, "alloc_hold_events"), req.Checkout, req.Shop)
	batch.Queue(c.q(ctx, route, "hold_lines_create"), req.Checkout, req.Shop, items, locs, qtys, h.ExpiresAt, h.CreatedAt)
	br := tx.SendBatch(ctx, batch)
	short := false
	for _, l := range resolved {
		var got int
		if err := br.QueryRow().Scan(&got); err != nil {
			br.Close()
			return nil, err
		}
		short = short || got < l.Quantity
	}
	if err := br.Close(); err != nil {
		return nil, err
	}
	if short {
		return nil, errSlowPath
	}
	h.Lines = resolved
	return h, nil
}

// existingAllocated answers an allocated Reserve whose checkout already has
// a hold or outcome: a replay when the hold satisfies the request
// (AllocationSatisfied), else ErrIdempotencyConflict.
func (c *Client) existingAllocated(ctx context.Context, tx pgx.Tx, req *reservation) (*holdfast.Hold, error) {
	h, err := c.getHold(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout)
	if errors.Is(err, holdfast.ErrNotFound) {
		// A checkout that waits (or waited) for other lines: allocated
		// lines never wait, so they are other lines (waitlist.go).
		h, err = c.waitOrNotFound(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout, nil)
		if errors.Is(err, holdfast.ErrNotFound) {
			return nil, errRetry // purged between the insert and this read
		}
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
func (c *Client) putLocationOrder(ctx context.Context, tx pgx.Tx, shopID int64, locations []int64) error {
	if len(locations) == 0 {
		_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteLocationOrder, "location_order_clear"), shopID)
		return err
	}
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteLocationOrder, "location_order_set"), shopID, locations)
	return err
}

func (c *Client) locationOrder(ctx context.Context, tx pgx.Tx, route string, shop int64) ([]int64, error) {
	var out []int64
	err := tx.QueryRow(ctx, c.q(ctx, route, "location_order_get"), shop).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return []int64{}, nil
	}
	return out, err
}
