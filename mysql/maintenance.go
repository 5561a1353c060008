package mysql

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/maint"
)

// Start launches the background maintenance: the expiry sweeper (which also
// purges old outcome records), the event sequencer, the waitlist server and
// the proactive replenisher. Any number of
// clients, in any number of processes, may run them at once. Start does not
// block; Stop ends them.
func (c *Client) Start(ctx context.Context) {
	c.workersMu.Lock()
	defer c.workersMu.Unlock()
	if c.workers == nil {
		c.workers = []*maint.Worker{
			{Name: "sweeper", Interval: c.cfg.SweepInterval, Logger: c.cfg.Logger, Step: c.sweepStep},
			{Name: "replenisher", Interval: c.cfg.ReplenishInterval, Logger: c.cfg.Logger, Step: c.replenishStep},
		}
		waitlister := &maint.Worker{Name: "waitlist", Interval: c.cfg.ReplenishInterval, Logger: c.cfg.Logger, Step: c.waitlistStep}
		c.waitlister.Store(waitlister)
		sequencing := &maint.Worker{Name: "sequencer", Interval: c.cfg.SweepInterval, Logger: c.cfg.Logger, Step: c.sequenceStep}
		c.sequencing.Store(sequencing)
		c.workers = append(c.workers, waitlister, sequencing)
	}
	for _, w := range c.workers {
		w.Start(ctx)
	}
}

// Stop ends the background maintenance and waits for it, bounded by ctx.
// Safe to call more than once and before Start.
func (c *Client) Stop(ctx context.Context) error {
	c.workersMu.Lock()
	workers := c.workers
	c.workersMu.Unlock()
	var errs []error
	for _, w := range workers {
		errs = append(errs, w.Stop(ctx))
	}
	return errors.Join(errs...)
}

func (c *Client) sweepStep(ctx context.Context) (bool, error) {
	n, err := c.SweepOnce(ctx)
	if err != nil {
		return false, err
	}
	// As on PostgreSQL: events are sequenced beside the sweep, by the
	// sequencer, which every tick kicks.
	if w := c.sequencing.Load(); w != nil {
		w.Kick()
	}
	p, err := c.PurgeOnce(ctx)
	if err != nil {
		return false, err
	}
	e, err := c.PurgeEventsOnce(ctx)
	if err != nil {
		return false, err
	}
	return n == c.cfg.SweepBatch || p == c.cfg.SweepBatch || e == c.cfg.SweepBatch, nil
}

// sequenceStep is the sequencer's tick: kicked by every sweeper tick, and
// at least every SweepInterval.
func (c *Client) sequenceStep(ctx context.Context) (bool, error) {
	q, err := c.SequenceEvents(ctx)
	return q >= holdfast.EventSequencePassMax, err
}

// SweepOnce expires one batch (at most Config.SweepBatch) of holds past
// their expiry, in one short transaction, and returns how many it expired.
// Their units go back to their keys' buffers where the key's lock row is
// free.
func (c *Client) SweepOnce(ctx context.Context) (int, error) {
	const route = holdfast.RouteSweep
	var n int
	err := c.run(ctx, nil, route, true, func(tx *sql.Tx, _ int) error {
		n = 0
		rows, err := tx.QueryContext(ctx, c.q(ctx, route, "sweep_pick"), c.now(), c.cfg.SweepBatch)
		if err != nil {
			return err
		}
		var picked [][2]any
		for rows.Next() {
			var shop int64
			var id []byte
			if err := rows.Scan(&shop, &id); err != nil {
				rows.Close()
				return err
			}
			picked = append(picked, [2]any{shop, hex.EncodeToString(id)})
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(picked) == 0 {
			return nil
		}
		raw, _ := json.Marshal(picked)
		res, err := tx.ExecContext(ctx, c.q(ctx, route, "sweep_expire"), string(raw), c.now())
		if err != nil {
			return err
		}
		expired, _ := res.RowsAffected()
		n = int(expired)
		rows, err = tx.QueryContext(ctx, c.q(ctx, route, "sweep_keys"), string(raw))
		if err != nil {
			return err
		}
		var keys []holdfast.Key
		for rows.Next() {
			var k holdfast.Key
			if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID); err != nil {
				rows.Close()
				return err
			}
			keys = append(keys, k)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "sweep_lines"), string(raw)); err != nil {
			return err
		}
		return c.returnUnits(ctx, tx, true, route, keys)
	})
	if err == nil && n > 0 {
		c.cfg.Observer.Expired(n)
		c.kickWaitlist()
	}
	return n, err
}

// PurgeOnce deletes one batch of outcome records (holds and stock changes)
// older than Config.OutcomeRetention, and of buyer lock rows of buyers with
// no hold left on record (purgeBuyerLocks), and returns the largest batch.
func (c *Client) PurgeOnce(ctx context.Context) (int, error) {
	const route = holdfast.RoutePurge
	var n int
	err := c.run(ctx, nil, route, true, func(tx *sql.Tx, _ int) error {
		n = 0
		for _, stmt := range []string{"purge_outcomes", "purge_changes", "waitlist_purge"} {
			res, err := tx.ExecContext(ctx, c.q(ctx, route, stmt), c.now(), c.cfg.OutcomeRetention.Microseconds(), c.cfg.SweepBatch)
			if err != nil {
				return err
			}
			m, _ := res.RowsAffected()
			n = max(n, int(m))
		}
		m, err := c.purgeBuyerLocks(ctx, tx)
		n = max(n, m)
		return err
	})
	return n, err
}

// purgeBuyerLocks deletes one batch (at most Config.SweepBatch) of the
// buyer_locks rows (buyer.go) of buyers with no hold of the shop left on
// record, after the outcome purge in tx. A row a transaction holds is
// skipped, never waited for, so it cannot vanish under the transaction
// that relies on it; one deleted while nobody holds it is created again by
// the buyer's next reservation.
func (c *Client) purgeBuyerLocks(ctx context.Context, tx *sql.Tx) (int, error) {
	const route = holdfast.RoutePurge
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "buyer_locks_pick"), c.cfg.SweepBatch)
	if err != nil {
		return 0, err
	}
	var picked [][3]any
	for rows.Next() {
		var shop, item int64
		var hash string
		if err := rows.Scan(&shop, &item, &hash); err != nil {
			rows.Close()
			return 0, err
		}
		picked = append(picked, [3]any{shop, item, hash})
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil || len(picked) == 0 {
		return 0, err
	}
	raw, _ := json.Marshal(picked)
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "buyer_locks_delete"), string(raw))
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ReplenishBatch bounds the keys one replenisher transaction examines.
const ReplenishBatch = 500

func (c *Client) replenishStep(ctx context.Context) (bool, error) {
	_, err := c.Replenish(ctx)
	return false, err
}

// Replenish walks every key in batches and refills the buffers that can and
// should grow (pool keys below the low-water mark, counter keys with
// unallocated stock), skipping keys whose lock row another transaction
// holds. It returns the units added.
func (c *Client) Replenish(ctx context.Context) (int, error) {
	const route = holdfast.RouteReplenish
	var cursor holdfast.Key
	added := 0
	for {
		page, pageAdded := 0, 0
		err := c.run(ctx, nil, route, true, func(tx *sql.Tx, _ int) error {
			rows, err := tx.QueryContext(ctx, c.q(ctx, route, "replenish_scan"),
				c.cfg.LowWaterPercent, string(c.cfg.Strategy), c.cfg.PoolCap,
				cursor.ShopID, cursor.ItemID, cursor.LocationID, ReplenishBatch)
			if err != nil {
				return err
			}
			var wanted []holdfast.Key
			page, pageAdded = 0, 0
			next := cursor
			for rows.Next() {
				var k holdfast.Key
				var want bool
				if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &want); err != nil {
					rows.Close()
					return err
				}
				page++
				next = k
				if want {
					wanted = append(wanted, k)
				}
			}
			if err := rows.Close(); err != nil {
				return err
			}
			for _, k := range wanted {
				mine, err := c.exists(ctx, tx, route, "trylock_key", k.ShopID, k.ItemID, k.LocationID)
				if err != nil {
					return err
				}
				if !mine {
					continue
				}
				n, err := c.refillKey(ctx, tx, true, route, k, false, 0)
				if err != nil {
					return err
				}
				pageAdded += n
			}
			cursor = next
			return nil
		})
		added += pageAdded
		if err != nil {
			return added, err
		}
		if page < ReplenishBatch {
			return added, nil
		}
	}
}
