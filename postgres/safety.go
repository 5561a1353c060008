package postgres

import (
	"context"
	"github.com/holdfast/holdfast"
	"github.com/jackc/pgx/v5"
)

// setSafetyOnce is one attempt of SetSafetyStock (driver.Stocker): under
// the key's lock it shrinks the buffer first so it never holds safety
// units, then writes the safety stock, then refills (a lowered safety
// stock is sellable at once).
func (c *Client) setSafetyOnce(ctx context.Context, tx pgx.Tx, k holdfast.Key, safety int) (*holdfast.Level, error) {
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "lock_key"), keyHash(k)); err != nil {
		return nil, err
	}
	st, err := c.keyState(ctx, tx, holdfast.RouteAdjust, k)
	if err != nil {
		return nil, err
	}
	// Buffers before the level row (lock order). shrink counts the
	// current safety stock; the change makes it count the new one.
	if err := c.shrink(ctx, tx, holdfast.RouteAdjust, k, false, st.safety-safety); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "safety_set"), k.ShopID, k.ItemID, k.LocationID, safety); err != nil {
		return nil, err
	}
	if safety != st.safety {
		// The feed has it (stock.changed, reason safety): the key's
		// sold-out state follows it.
		if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "safety_event"), k.ShopID, k.ItemID, k.LocationID, c.now()); err != nil {
			return nil, err
		}
	}
	// A wait the new safety stock leaves asking more than could ever be
	// sold ends now, before the refill and the answer (waitlist.go).
	if _, err := c.endUnservable(ctx, tx, []holdfast.Key{k}, map[holdfast.Key]bool{k: true}); err != nil {
		return nil, err
	}
	if _, err := c.refill(ctx, tx, holdfast.RouteAdjust, []holdfast.Key{k}); err != nil {
		return nil, err
	}
	return c.level(ctx, tx, holdfast.RouteAdjust, k)
}
