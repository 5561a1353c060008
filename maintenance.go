package holdfast

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/internal/maint"
)

// Start launches the background maintenance: the expiry sweeper (which also
// purges old outcome records) and the proactive replenisher. Any number of
// clients, in any number of replicas, may run them at once. Start does not
// block; Stop ends them.
func (c *Client) Start(ctx context.Context) {
	if c.workers == nil {
		c.workers = []*maint.Worker{
			{Name: "sweeper", Interval: c.cfg.SweepInterval, Logger: c.cfg.Logger, Step: c.sweepStep},
			{Name: "replenisher", Interval: c.cfg.ReplenishInterval, Logger: c.cfg.Logger, Step: c.replenishStep},
		}
	}
	for _, w := range c.workers {
		w.Start(ctx)
	}
}

// Stop ends the background maintenance and waits for it, bounded by ctx.
// Safe to call more than once and before Start.
func (c *Client) Stop(ctx context.Context) error {
	var errs []error
	for _, w := range c.workers {
		errs = append(errs, w.Stop(ctx))
	}
	return errors.Join(errs...)
}

func (c *Client) sweepStep(ctx context.Context) (bool, error) {
	n, err := c.SweepOnce(ctx)
	if err != nil {
		return false, err
	}
	p, err := c.PurgeOnce(ctx)
	if err != nil {
		return false, err
	}
	return n == c.cfg.SweepBatch || p == c.cfg.SweepBatch, nil
}

// SweepOnce expires one batch (at most Config.SweepBatch) of holds past their
// expiry, in one short transaction, and returns how many it expired. Their
// units go back to their keys' buffers where the key's lock is free.
func (c *Client) SweepOnce(ctx context.Context) (int, error) {
	var n int
	err := c.run(ctx, c.pool, RouteSweep, true, true, func(tx pgx.Tx, _ int) error {
		rows, err := tx.Query(ctx, c.q(ctx, RouteSweep, "sweep_expire"), c.now(), c.cfg.SweepBatch)
		if err != nil {
			return err
		}
		var shops []int64
		var strs []string // as text: pgx's exec query mode (PgBouncer) cannot encode []uuid.UUID
		for rows.Next() {
			var shop int64
			var id uuid.UUID
			if err := rows.Scan(&shop, &id); err != nil {
				return err
			}
			shops, strs = append(shops, shop), append(strs, id.String())
		}
		if err := rows.Err(); err != nil {
			return err
		}
		n = len(strs)
		if n == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, c.q(ctx, RouteSweep, "sweep_lines"), shops, strs)
		if err != nil {
			return err
		}
		keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Key])
		if err != nil {
			return err
		}
		return c.returnUnits(ctx, tx, RouteSweep, keys)
	})
	if err == nil && n > 0 {
		c.cfg.Observer.Expired(n)
	}
	return n, err
}

// PurgeOnce deletes one batch (at most Config.SweepBatch each) of hold
// outcome records and of stock change records older than
// Config.OutcomeRetention and returns how many, the larger of the two.
func (c *Client) PurgeOnce(ctx context.Context) (int, error) {
	var n int
	err := c.run(ctx, c.pool, RoutePurge, true, true, func(tx pgx.Tx, _ int) error {
		n = 0
		for _, stmt := range []string{"purge_outcomes", "purge_stock_changes"} {
			tag, err := tx.Exec(ctx, c.q(ctx, RoutePurge, stmt), c.now(), c.cfg.OutcomeRetention.Microseconds(), c.cfg.SweepBatch)
			if err != nil {
				return err
			}
			n = max(n, int(tag.RowsAffected()))
		}
		return nil
	})
	return n, err
}

// ReplenishBatch bounds the keys one replenisher transaction examines.
const ReplenishBatch = 500

func (c *Client) replenishStep(ctx context.Context) (bool, error) {
	_, err := c.Replenish(ctx)
	return false, err
}

// Replenish walks every key in batches and refills the buffers that can and
// should grow (pool keys below the low-water mark, counter and slotted keys
// with unallocated stock), skipping keys whose lock another transaction
// holds. It returns the units added.
func (c *Client) Replenish(ctx context.Context) (int, error) {
	var cursor Key
	added := 0
	for {
		var page int
		err := c.run(ctx, c.pool, RouteReplenish, true, true, func(tx pgx.Tx, _ int) error {
			rows, err := tx.Query(ctx, c.q(ctx, RouteReplenish, "replenish_scan"),
				cursor.ShopID, cursor.ItemID, cursor.LocationID, ReplenishBatch,
				string(c.cfg.Strategy), c.cfg.PoolCap, c.cfg.LowWaterPercent)
			if err != nil {
				return err
			}
			var wanted []Key
			page = 0
			for rows.Next() {
				var k Key
				var want bool
				if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &want); err != nil {
					return err
				}
				page++
				cursor = k
				if want {
					wanted = append(wanted, k)
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if len(wanted) == 0 {
				return nil
			}
			hashes := make([]int64, len(wanted))
			for i, k := range wanted {
				hashes[i] = keyHash(k)
			}
			lrows, err := tx.Query(ctx, c.q(ctx, RouteReplenish, "trylock_keys"), hashes)
			if err != nil {
				return err
			}
			idx, err := pgx.CollectRows(lrows, pgx.RowTo[int])
			if err != nil {
				return err
			}
			locked := make([]Key, len(idx))
			for i, n := range idx {
				locked[i] = wanted[n-1]
			}
			if len(locked) == 0 {
				return nil
			}
			res, err := c.refill(ctx, tx, RouteReplenish, locked)
			if err != nil {
				return err
			}
			for _, r := range res {
				if r.added > 0 {
					added += r.added
					c.cfg.Observer.Replenished(r.key, false, r.added)
				}
			}
			return nil
		})
		if err != nil {
			return added, err
		}
		if page < ReplenishBatch {
			return added, nil
		}
	}
}
