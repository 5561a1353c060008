package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// The allocation phases (hfdriver.Allocator; the engine decides between
// them, engine/allocate.go), in this engine's lock order (doc.go):
//
//  1. allocateBegin: the checkout's in-flight mark before anything else
//     (inflight.go), then the shop's location order when a line needs it;
//  2. allocateRead: a named buyer's lock rows (buyer.go); on the slowest
//     level only, every candidate key's lock row in key order, and a
//     refill of each key that has one; on the slower levels, the counter
//     rows of every candidate key (and fixed key), in key order
//     (alloc_lock.sql): with those rows locked no reservation is in flight
//     on them; then one sellable read of them;
//  3. allocateTake: the usual take of the resolved cart, whose counter rows
//     are all locked already (but on the fast path), then the hold with
//     its resolved lines, then the lines.

// allocateBegin marks the checkout in flight and reads the shop's location
// order when order is set (hfdriver.Allocator.AllocateBegin).
func (c *Client) allocateBegin(ctx context.Context, tx *sql.Tx, req *reservation, order bool) ([]int64, error) {
	if err := c.markInFlight(ctx, tx, req.Shop, req.Checkout); err != nil {
		return nil, err
	}
	if !order {
		return nil, nil
	}
	return c.locationOrder(ctx, tx, holdfast.RouteReserve, req.Shop)
}

// allocateRead checks a named buyer's limits and reads the keys' sellable
// units (hfdriver.Allocator.AllocateRead).
func (c *Client) allocateRead(ctx context.Context, tx *sql.Tx, own bool, req *reservation, keys []holdfast.Line, mode takeMode) (*hfdriver.AllocRead, error) {
	const route = holdfast.RouteReserve
	keysRaw, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	if req.Buyer != "" {
		// The buyer's lock rows first (the lock order, buyer.go); limits
		// are per item, whatever location allocation picks.
		over, err := c.enforceBuyer(ctx, tx, own, route, req.Shop, req.Checkout, req.Lines, req.BuyerHash)
		if err != nil {
			return nil, err
		}
		if over != nil {
			return nil, over
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
				return nil, err
			}
			if ok {
				mine = append(mine, k)
			}
		}
		for _, k := range mine {
			if _, err := c.refillKey(ctx, tx, own, route, k, true, 0); err != nil {
				return nil, err
			}
		}
	}
	if mode != takeFast {
		// Lock-free on the fast path: the read can only over-count.
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "alloc_lock"), string(keysRaw), req.Shop); err != nil {
			return nil, err
		}
	}
	sellable, err := c.sellable(ctx, tx, route, req.Shop, keysRaw)
	if err != nil {
		return nil, err
	}
	return &hfdriver.AllocRead{Sellable: sellable, Mode: mode}, nil
}

// allocateTake takes the resolved lines and creates the hold with them
// (hfdriver.Allocator.AllocateTake).
func (c *Client) allocateTake(ctx context.Context, tx *sql.Tx, own bool, req *reservation, read *hfdriver.AllocRead, resolved []holdfast.Line) (*holdfast.Hold, []holdfast.Shortfall, error) {
	const route = holdfast.RouteReserve
	raw, err := json.Marshal(resolved)
	if err != nil {
		return nil, nil, err
	}
	short, err := c.take(ctx, tx, own, route, req.Shop, resolved, raw, read.Mode)
	if err != nil || len(short) > 0 {
		return nil, short, err
	}
	id := req.Checkout[:]
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_create"),
		req.Shop, id, string(raw), req.TTL.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now(), req.Shop, id)
	if isDup(err) || (err == nil && rowsAffected(res) == 0) { // 0: the checkout waits (waitlist.go)
		return nil, nil, hfdriver.ErrHoldExists
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_create"), req.Shop, id); err != nil {
		return nil, nil, err
	}
	if req.BuyerHash != nil {
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "buyer_tag"), req.BuyerHash, req.Shop, id); err != nil {
			return nil, nil, err
		}
	}
	h, err := c.readHold(ctx, tx, route, "hold_get", req.Shop, req.Checkout)
	if err != nil {
		return nil, nil, err
	}
	h.Lines = resolved
	return h, nil, nil
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
