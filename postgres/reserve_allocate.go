package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
	"github.com/jackc/pgx/v5"
)

// The allocation phases (driver.Allocator; the engine decides between
// them, engine/allocate.go), in this engine's lock order:
//
//  1. allocateBegin: the shop's location order, when a line needs it;
//  2. allocateRead: the hold row first (hold_insert.sql, its lines a
//     placeholder): a retry of the same checkout waits there, as for any
//     reservation; on the slowest level only, a named buyer's locks, then
//     every candidate key's advisory lock in key order and a refill of
//     each; then one sellable snapshot of every candidate key (and fixed
//     key), on the slower levels after locking every counter row of them,
//     in key and slot order (alloc_lock.sql): with those rows locked no
//     reservation is in flight on them, so the snapshot is what this
//     attempt can take;
//  3. allocateTake: the take of the resolved cart in key order, like any
//     cart's, and the hold's resolved lines (alloc_hold_lines.sql,
//     hold_lines_create.sql), on the fast path in the take's round trip.

// allocateBegin reads the shop's location order when order is set.
func (c *Client) allocateBegin(ctx context.Context, tx pgx.Tx, req *reservation, order bool) ([]int64, error) {
	if !order {
		return nil, nil
	}
	return c.locationOrder(ctx, tx, holdfast.RouteReserve, req.Shop)
}

// allocateRead places the hold row and reads the keys' sellable units
// (driver.Allocator.AllocateRead).
func (c *Client) allocateRead(ctx context.Context, tx pgx.Tx, req *reservation, keys []holdfast.Line, mode takeMode) (*driver.AllocRead, error) {
	const route = holdfast.RouteReserve
	if req.Buyer != "" {
		// A named buyer's locks come after the hold row and before any
		// buffer: only this mode takes its hold row on its own first.
		mode = takeLocked
	}
	items, locs, _ := columns(keys)
	h := &holdfast.Hold{CheckoutID: req.Checkout, ShopID: req.Shop, Status: holdfast.StatusHeld, Claimable: true, Revision: 1}
	insert := []any{req.Checkout, req.Shop, "[]", req.TTL.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now(), false}
	read := &driver.AllocRead{Mode: mode, Hold: h}

	if mode == takeLocked {
		err := tx.QueryRow(ctx, c.q(ctx, route, "hold_insert"), insert...).Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, driver.ErrHoldExists
		}
		if err != nil {
			return nil, err
		}
		if req.Buyer != "" {
			// After the hold row, before any key lock (the lock order).
			if err := c.checkBuyer(ctx, tx, req); err != nil {
				return nil, err
			}
		}
		// Key locks before buffers, all of them, in key order; each key
		// refilled under its lock.
		for _, k := range keys {
			if _, err := tx.Exec(ctx, c.q(ctx, route, "lock_key"), keyHash(holdfast.Key{ShopID: req.Shop, ItemID: k.ItemID, LocationID: k.LocationID})); err != nil {
				return nil, err
			}
		}
		for _, k := range keys {
			if err := c.refillKey(ctx, tx, route, holdfast.Key{ShopID: req.Shop, ItemID: k.ItemID, LocationID: k.LocationID}); err != nil {
				return nil, err
			}
		}
		if _, err := tx.Exec(ctx, c.q(ctx, route, "alloc_lock"), req.Shop, items, locs); err != nil {
			return nil, err
		}
		read.Sellable, err = c.sellable(ctx, tx, route, req.Shop, keys)
		if err != nil {
			return nil, err
		}
		return read, nil
	}
	// One round trip: hold row, counter locks (not on the fast path),
	// snapshot.
	batch := &pgx.Batch{}
	batch.Queue(c.q(ctx, route, "hold_insert"), insert...)
	if mode != takeFast {
		batch.Queue(c.q(ctx, route, "alloc_lock"), req.Shop, items, locs)
	}
	batch.Queue(c.q(ctx, route, "sellable"), req.Shop, items, locs)
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	err := br.QueryRow().Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline)
	existing := errors.Is(err, pgx.ErrNoRows)
	if err != nil && !existing {
		return nil, err
	}
	if mode != takeFast {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var avail, held int
		var waited bool
		if err := rows.Scan(&avail, &held, &waited); err != nil {
			rows.Close()
			return nil, err
		}
		if waited {
			// The key's units go to its waiters first (waitlist.go):
			// nothing is sellable to this cart there.
			avail = 0
		}
		read.Sellable = append(read.Sellable, max(0, avail-held))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, err
	}
	if existing {
		return nil, driver.ErrHoldExists
	}
	return read, nil
}

// allocateTake takes the resolved lines and writes the hold's lines
// (driver.Allocator.AllocateTake).
func (c *Client) allocateTake(ctx context.Context, tx pgx.Tx, req *reservation, read *driver.AllocRead, resolved []holdfast.Line) (*holdfast.Hold, []holdfast.Shortfall, error) {
	const route = holdfast.RouteReserve
	h := read.Hold
	if read.Mode == takeFast {
		h, err := c.allocateFast(ctx, tx, req, h, resolved)
		return h, nil, err
	}
	short, err := c.take(ctx, tx, route, req.Shop, resolved, read.Mode)
	if err != nil || len(short) > 0 {
		return nil, short, err
	}
	raw, err := json.Marshal(resolved)
	if err != nil {
		return nil, nil, err
	}
	ritems, rlocs, rqtys := columns(resolved)
	batch := &pgx.Batch{}
	batch.Queue(c.q(ctx, route, "alloc_hold_lines"), req.Checkout, req.Shop, string(raw))
	batch.Queue(c.q(ctx, route, "alloc_hold_events"), req.Checkout, req.Shop)
	batch.Queue(c.q(ctx, route, "hold_lines_create"), req.Checkout, req.Shop, ritems, rlocs, rqtys, h.ExpiresAt, h.CreatedAt)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return nil, nil, err
	}
	h.Lines = resolved
	return h, nil, nil
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
		c.queueTake(ctx, batch, route, infos[i].strategy, req.Shop, l, false)
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
