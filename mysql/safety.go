package mysql

import (
	"context"
	"database/sql"
	"errors"

	"github.com/holdfast/holdfast"
)

// setSafetyOnce is one attempt of SetSafetyStock (driver.Stocker): under
// the key's lock row it writes the safety stock on the level row, then
// shrinks the buffer so it holds no safety units (MySQL's lock order: lock
// rows, levels, buffers), then refills.
func (c *Client) setSafetyOnce(ctx context.Context, tx *sql.Tx, k holdfast.Key, safety int) (*holdfast.Level, error) {
	const route = holdfast.RouteAdjust
	locked, err := c.lockKey(ctx, tx, route, k)
	if err != nil {
		return nil, err
	}
	if !locked {
		_, err := tx.ExecContext(ctx, c.q(ctx, route, "lock_create"), k.ShopID, k.ItemID, k.LocationID)
		if isDup(err) {
			return nil, errRetry // created meanwhile: lock it on the next run
		}
		if err != nil {
			return nil, err
		}
	}
	var old int
	err = tx.QueryRowContext(ctx, c.q(ctx, route, "level_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&old)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.ExecContext(ctx, c.q(ctx, route, "level_insert"), k.ShopID, k.ItemID, k.LocationID, 0, c.now())
	}
	if err != nil {
		return nil, err
	}
	var was int
	if err := tx.QueryRowContext(ctx, c.q(ctx, route, "safety_get"), k.ShopID, k.ItemID, k.LocationID).Scan(&was); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "safety_set"), safety, c.now(), k.ShopID, k.ItemID, k.LocationID); err != nil {
		return nil, err
	}
	if safety != was {
		// The feed has it (stock.changed, reason safety): the key's
		// sold-out state follows it.
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "safety_event"), c.now(), k.ShopID, k.ItemID, k.LocationID); err != nil {
			return nil, err
		}
	}
	// A wait the new safety stock leaves asking more than could ever
	// be sold ends now, before the refill and the answer (waitlist.go).
	if _, err := c.endUnservable(ctx, tx, []holdfast.Key{k}); err != nil {
		return nil, err
	}
	if err := c.shrink(ctx, tx, route, k, false); err != nil {
		return nil, err
	}
	if _, err := c.refillKey(ctx, tx, true, route, k, false, 0); err != nil {
		return nil, err
	}
	return c.level(ctx, tx, route, k)
}
