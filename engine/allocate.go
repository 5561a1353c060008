package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// reserveAllocated is Reserve for a cart with allocated lines (LocationID
// 0), on the plain path only (never the combiner or the sold-out hint,
// whose keys are fixed). Each attempt, in one transaction
// (driver.Allocator):
//
//  1. the driver starts it (AllocateBegin: MySQL's in-flight mark) and
//     reads the shop's default location order when a line needs it; the
//     engine expands each allocated line's candidates and lists every key
//     the cart may touch, in key order;
//  2. the driver reads those keys' sellable units (AllocateRead): on the
//     slower levels under their locks, taken in the one global key order
//     whatever the candidates' priority order, so carts allocating the
//     same items in opposite orders cannot deadlock; on the fast path
//     lock-free, a read that can only over-count (units in flight to
//     others), so it never passes over a candidate that could supply a
//     line;
//  3. the engine chooses (holdfast.ResolveAllocation: per line, the first
//     candidate in priority order that can supply it, or a split);
//  4. the driver takes the resolved cart and writes the hold
//     (AllocateTake).
//
// A shortage the take finds on a chosen key (units in flight on a pool key,
// an over-counted fast read) re-runs the attempt one level slower, then as
// a retry: it never reaches the caller as a shortfall of a location that
// allocation picked.
func (c *Client[TTx]) reserveAllocated(ctx context.Context, tx TTx, own bool, req *driver.Reservation, input []holdfast.Line, start time.Time) (*holdfast.Hold, error) {
	var h *holdfast.Hold
	var keys []holdfast.Line
	var beforeSlow func() error
	if own {
		beforeSlow = func() error { return c.d.RefillInline(ctx, req.Shop, keys) }
	}
	err := c.core.Run(ctx, holdfast.RouteReserve, own, true, beforeSlow, func(level int) error {
		mode := driver.ModeOf(level, own)
		return c.d.Attempt(ctx, tx, own, holdfast.RouteReserve, func(tx TTx) error {
			var err error
			h, keys, err = c.allocateOnce(ctx, tx, own, req, input, mode)
			return err
		})
	})
	c.observe(holdfast.RouteReserve, start, err, h)
	if err != nil {
		return nil, err
	}
	if own && !h.Replayed {
		c.noteReserved(h, req.Shop, h.Lines) // the lines the allocation resolved
	}
	return h, nil
}

// allocateOnce is one attempt of reserveAllocated. It also returns the
// candidate keys, for the refill between the fast and the slow attempt.
func (c *Client[TTx]) allocateOnce(ctx context.Context, tx TTx, own bool, req *driver.Reservation, input []holdfast.Line, mode driver.TakeMode) (*holdfast.Hold, []holdfast.Line, error) {
	order, err := c.d.AllocateBegin(ctx, tx, req, holdfast.NeedsLocationOrder(req.Lines))
	if err != nil {
		return nil, nil, err
	}
	lines, err := holdfast.ExpandAllocation(req.Lines, input, order)
	if err != nil {
		return nil, nil, err
	}
	keys := holdfast.AllocationKeys(lines)
	read, err := c.d.AllocateRead(ctx, tx, own, req, keys, mode)
	if err != nil {
		h, err := c.allocationAnswer(ctx, tx, req, err)
		return h, keys, err
	}
	resolved, short := holdfast.ResolveAllocation(lines, keys, read.Sellable)
	if len(short) == 0 {
		var h *holdfast.Hold
		h, short, err = c.d.AllocateTake(ctx, tx, own, req, read, resolved)
		if err != nil {
			h, err := c.allocationAnswer(ctx, tx, req, err)
			return h, keys, err
		}
		if len(short) == 0 {
			return h, keys, nil
		}
	}
	if !c.d.HoldFirst() {
		// A retry of a reservation made before the stock ran out is
		// answered with its hold, not with sold out.
		h, err := c.existingAllocated(ctx, tx, req)
		if !errors.Is(err, holdfast.ErrNotFound) {
			return h, keys, err
		}
	}
	if resolved != nil && holdfast.AllocatedShort(req.Lines, short) {
		// The choice was made on a read that units in flight to others
		// made stale.
		if read.Mode != driver.TakeLocked {
			return nil, keys, driver.ErrSlowPath
		}
		return nil, keys, driver.ErrRetry
	}
	return nil, keys, &holdfast.InsufficientStockError{Lines: short}
}

// allocationAnswer answers an allocation phase's error: a hold in place
// answers the request (a checkout that vanished between the driver's
// finding and this read was purged meanwhile: a retry); an over-limit
// answer of a driver that creates the hold last is first checked against
// a hold the checkout already has (a retry of a reservation made before).
func (c *Client[TTx]) allocationAnswer(ctx context.Context, tx TTx, req *driver.Reservation, err error) (*holdfast.Hold, error) {
	var over *holdfast.BuyerLimitError
	switch {
	case errors.Is(err, driver.ErrHoldExists):
		h, err := c.existingAllocated(ctx, tx, req)
		if errors.Is(err, holdfast.ErrNotFound) {
			return nil, driver.ErrRetry
		}
		return h, err
	case errors.As(err, &over) && !c.d.HoldFirst():
		h, xerr := c.existingAllocated(ctx, tx, req)
		if errors.Is(xerr, holdfast.ErrNotFound) {
			return nil, err
		}
		return h, xerr
	}
	return nil, err
}

// existingAllocated answers an allocated Reserve whose checkout already has
// a hold or outcome: a replay (with driver.ErrRollback, so what the attempt
// did goes back) when the hold satisfies the request
// (holdfast.AllocationSatisfied), else ErrIdempotencyConflict; an ended
// hold answers how it ended. ErrNotFound means the checkout is new.
func (c *Client[TTx]) existingAllocated(ctx context.Context, tx TTx, req *driver.Reservation) (*holdfast.Hold, error) {
	const route = holdfast.RouteReserve
	h, err := c.d.ReadHold(ctx, tx, route, req.Shop, req.Checkout)
	if errors.Is(err, holdfast.ErrNotFound) {
		// A checkout that waits (or waited) for other lines: allocated
		// lines never wait, so they are other lines.
		h, err = c.waitOrNotFound(ctx, tx, route, req.Shop, req.Checkout)
		if IsWaitAnswer(err) {
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
	hash, err := c.d.BuyerOf(ctx, tx, route, req.Shop, req.Checkout)
	if err != nil {
		return nil, err
	}
	if err := SameBuyer(hash, req.BuyerHash); err != nil {
		return nil, err
	}
	h.Replayed = true
	return h, driver.ErrRollback
}

// SameBuyer is the verdict on a replay's buyer: a retry of a checkout
// whose hold was made for another buyer (or for one when the retry names
// none, or none when it names one) is another request,
// ErrIdempotencyConflict, not a replay of someone else's hold (issue 24
// item 6). held is the hold's buyer hash, asked the request's.
func SameBuyer(held, asked []byte) error {
	if !bytes.Equal(held, asked) {
		return fmt.Errorf("%w: the checkout's hold was made for another buyer id", holdfast.ErrIdempotencyConflict)
	}
	return nil
}

// IsWaitAnswer reports an answer of a checkout's wait (it waits, or its
// wait ended without a hold).
func IsWaitAnswer(err error) bool {
	return errors.Is(err, holdfast.ErrWaitlisted) || errors.Is(err, holdfast.ErrWaitExpired) ||
		errors.Is(err, holdfast.ErrWaitCancelled) || errors.Is(err, holdfast.ErrWaitUnservable)
}
