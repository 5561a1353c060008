package mysql

import (
	"context"
	"database/sql"
	"errors"

	"github.com/holdfast/holdfast"
)

// SetSafetyStock sets a key's safety stock (0 removes it), creating the key
// (available 0) when it is new, and returns its level: under the key's
// lock row it writes the safety stock on the level row, then shrinks the
// buffer so it holds no safety units (MySQL's lock order: lock rows,
// levels, buffers), then refills. See postgres.Client.SetSafetyStock and
// holdfast's safety.go for what a safety stock above the free units means.
func (c *Client) SetSafetyStock(ctx context.Context, k holdfast.Key, safety int) (*holdfast.Level, error) {
	if err := holdfast.ValidateSafety(k, safety); err != nil {
		return nil, err
	}
	const route = holdfast.RouteAdjust
	var lvl *holdfast.Level
	err := c.run(ctx, nil, route, true, func(tx *sql.Tx, _ int) error {
		locked, err := c.lockKey(ctx, tx, route, k)
		if err != nil {
			return err
		}
		if !locked {
			_, err := tx.ExecContext(ctx, c.q(ctx, route, "lock_create"), k.ShopID, k.ItemID, k.LocationID)
			if isDup(err) {
				return errRetry // created meanwhile: lock it on the next run
			}
			if err != nil {
				return err
			}
		}
		var old int
		err = tx.QueryRowContext(ctx, c.q(ctx, route, "level_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&old)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.ExecContext(ctx, c.q(ctx, route, "level_insert"), k.ShopID, k.ItemID, k.LocationID, 0, c.now())
		}
		if err != nil {
			return err
		}
		var was int
		if err := tx.QueryRowContext(ctx, c.q(ctx, route, "safety_get"), k.ShopID, k.ItemID, k.LocationID).Scan(&was); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "safety_set"), safety, c.now(), k.ShopID, k.ItemID, k.LocationID); err != nil {
			return err
		}
		if safety != was {
			// The feed has it (stock.changed, reason safety): the key's
			// sold-out state follows it.
			if _, err := tx.ExecContext(ctx, c.q(ctx, route, "safety_event"), c.now(), k.ShopID, k.ItemID, k.LocationID); err != nil {
				return err
			}
		}
		// A wait the new safety stock leaves asking more than could ever
		// be sold ends now, before the refill and the answer (waitlist.go).
		if _, err := c.endUnservable(ctx, tx, []holdfast.Key{k}); err != nil {
			return err
		}
		if err := c.shrink(ctx, tx, route, k, false); err != nil {
			return err
		}
		if _, err := c.refillKey(ctx, tx, true, route, k, false, 0); err != nil {
			return err
		}
		lvl, err = c.level(ctx, tx, route, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.kickWaitlist() // a lower safety stock may serve waiters
	return lvl, nil
}
