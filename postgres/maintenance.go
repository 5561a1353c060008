package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// StartMaintenance opens the maintenance pool the engine's workers run on
// (driver.MaintenanceStarter): WithMaintenancePool's, or one of
// Config.MaintenanceConns connections, never the client's pool.
func (d *engineDriver) StartMaintenance(ctx context.Context) error {
	c := d.c()
	c.maintMu.Lock()
	defer c.maintMu.Unlock()
	if c.maintPool != nil {
		return nil
	}
	if c.maintPoolOpt != nil {
		c.maintPool = c.maintPoolOpt
		return nil
	}
	pc := c.pool.Config()
	pc.MaxConns = int32(c.cfg.MaintenanceConns)
	pc.MinConns = 0
	p, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		// Only a bad configuration fails here (connecting is lazy); the
		// client pool's config was good.
		return fmt.Errorf("maintenance pool: %w", err)
	}
	c.maintPool, c.maintOwned = p, true
	return nil
}

// StopMaintenance closes the maintenance pool StartMaintenance created
// (driver.MaintenanceStarter), once the workers stopped.
func (d *engineDriver) StopMaintenance() {
	c := d.c()
	c.maintMu.Lock()
	defer c.maintMu.Unlock()
	if c.maintOwned && c.maintPool != nil {
		c.maintPool.Close()
	}
	c.maintPool, c.maintOwned = nil, false
}

// maintenance is the pool maintenance runs on: the maintenance pool while
// started, else (SweepOnce, Replenish called directly) the configured
// maintenance pool or the client's.
func (c *Client) maintenance() *pgxpool.Pool {
	c.maintMu.Lock()
	defer c.maintMu.Unlock()
	switch {
	case c.maintPool != nil:
		return c.maintPool
	case c.maintPoolOpt != nil:
		return c.maintPoolOpt
	}
	return c.pool
}

// NextExpiry is the wait until the nearest held hold expires, one index
// probe on the maintenance pool (driver.ExpiryProber).
func (d *engineDriver) NextExpiry(ctx context.Context) (time.Duration, bool, error) {
	c := d.c()
	var us *int64
	if err := c.maintenance().QueryRow(ctx, c.q(ctx, holdfast.RouteSweep, "next_expiry"), c.now()).Scan(&us); err != nil || us == nil {
		return 0, false, err
	}
	return time.Duration(*us) * time.Microsecond, true, nil
}

// sweepAttempt expires at most limit holds past their expiry and gives
// their units back to their keys' buffers where the key's lock is free
// (driver.Maintainer.SweepAttempt).
func (c *Client) sweepAttempt(ctx context.Context, tx pgx.Tx, limit int) (int, error) {
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteSweep, "sweep_expire"), c.now(), limit)
	if err != nil {
		return 0, err
	}
	var shops []int64
	var strs []string // as text: pgx's exec query mode (PgBouncer) cannot encode []uuid.UUID
	for rows.Next() {
		var shop int64
		var id uuid.UUID
		if err := rows.Scan(&shop, &id); err != nil {
			return 0, err
		}
		shops, strs = append(shops, shop), append(strs, id.String())
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(strs) == 0 {
		return 0, nil
	}
	rows, err = tx.Query(ctx, c.q(ctx, holdfast.RouteSweep, "sweep_lines"), shops, strs)
	if err != nil {
		return 0, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[holdfast.Key])
	if err != nil {
		return 0, err
	}
	return len(strs), c.returnUnits(ctx, tx, holdfast.RouteSweep, keys)
}

// purgeAttempt deletes at most limit each of hold outcome records, stock
// change records and ended waits (waitlist.go) older than
// Config.OutcomeRetention, and of events past their retention, and
// answers the largest count (driver.Maintainer.PurgeAttempt).
func (c *Client) purgeAttempt(ctx context.Context, tx pgx.Tx, limit int) (int, error) {
	n := 0
	for _, stmt := range []string{"purge_outcomes", "purge_stock_changes", "waitlist_purge"} {
		tag, err := tx.Exec(ctx, c.q(ctx, holdfast.RoutePurge, stmt), c.now(), c.cfg.OutcomeRetention.Microseconds(), limit)
		if err != nil {
			return 0, err
		}
		n = max(n, int(tag.RowsAffected()))
	}
	tag, err := tx.Exec(ctx, c.q(ctx, holdfast.RoutePurge, "purge_events"),
		c.now(), c.cfg.EventRetention.Microseconds(), limit, c.cfg.EventRetentionMax.Microseconds())
	if err != nil {
		return 0, err
	}
	return max(n, int(tag.RowsAffected())), nil
}

// ReplenishBatch bounds the keys one replenisher transaction examines.
const ReplenishBatch = engine.ReplenishBatch

// DirtyKeysMax bounds the keys a client remembers for its replenisher
// between passes; past it, keys are not remembered (their next short
// reservation refills them inline).
const DirtyKeysMax = engine.DirtyKeysMax

// DequeueChangedKeys takes up to limit keys queued by releases and sweeps
// that could not refill them (replenish_queue, shared by replicas)
// (driver.ChangedKeys).
func (d *engineDriver) DequeueChangedKeys(ctx context.Context, limit int) ([]holdfast.Key, error) {
	c := d.c()
	var keys []holdfast.Key
	err := c.run(ctx, c.maintenance(), holdfast.RouteReplenish, true, true, func(tx pgx.Tx, _ int) error {
		rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "dequeue_keys"), limit)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, pgx.RowToStructByPos[holdfast.Key])
		return err
	})
	return keys, err
}

// RefillChangedKeys folds the keys' held counts (foldHeld), then refills
// them (refillKeys), skipping keys whose lock another transaction holds,
// answered as busy (driver.ChangedKeys). A failed fold answers no key
// busy; a failed refill answers all of them.
func (d *engineDriver) RefillChangedKeys(ctx context.Context, keys []holdfast.Key) ([]holdfast.Key, error) {
	c := d.c()
	if err := c.foldHeld(ctx, keys); err != nil {
		return nil, err
	}
	_, busy, err := c.refillKeys(ctx, keys)
	if err != nil {
		return keys, err
	}
	return busy, nil
}

// foldHeld folds the per-backend held_counts rows of the keys whose
// advisory lock it gets at once (held_fold.sql), in a short transaction of
// its own: it holds rows a reserver may want next, so it must not wait for a
// counter row (a refill) while holding them. Keys it cannot lock are folded
// on a later pass; nothing depends on it but the rows a key keeps.
func (c *Client) foldHeld(ctx context.Context, keys []holdfast.Key) error {
	return c.run(ctx, c.maintenance(), holdfast.RouteReplenish, true, true, func(tx pgx.Tx, _ int) error {
		hashes := make([]int64, len(keys))
		for i, k := range keys {
			hashes[i] = keyHash(k)
		}
		lrows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "trylock_keys"), hashes)
		if err != nil {
			return err
		}
		idx, err := pgx.CollectRows(lrows, pgx.RowTo[int])
		if err != nil || len(idx) == 0 {
			return err
		}
		shops, items, locs := make([]int64, len(idx)), make([]int64, len(idx)), make([]int64, len(idx))
		for i, n := range idx {
			k := keys[n-1]
			shops[i], items[i], locs[i] = k.ShopID, k.ItemID, k.LocationID
		}
		_, err = tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "held_fold"), shops, items, locs)
		return err
	})
}

// refillKeys refills keys in one transaction, skipping those whose lock
// another transaction holds (returned as busy). It returns the units added.
func (c *Client) refillKeys(ctx context.Context, keys []holdfast.Key) (added int, busy []holdfast.Key, err error) {
	err = c.run(ctx, c.maintenance(), holdfast.RouteReplenish, true, true, func(tx pgx.Tx, _ int) error {
		added, busy = 0, nil
		hashes := make([]int64, len(keys))
		for i, k := range keys {
			hashes[i] = keyHash(k)
		}
		lrows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "trylock_keys"), hashes)
		if err != nil {
			return err
		}
		idx, err := pgx.CollectRows(lrows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		got := make(map[int]bool, len(idx))
		locked := make([]holdfast.Key, 0, len(idx))
		for _, n := range idx {
			got[n-1] = true
			locked = append(locked, keys[n-1])
		}
		for i, k := range keys {
			if !got[i] {
				busy = append(busy, k)
			}
		}
		if len(locked) == 0 {
			return nil
		}
		res, err := c.refill(ctx, tx, holdfast.RouteReplenish, locked)
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
	return added, busy, err
}

// replenishAttempt examines at most limit keys after after and refills
// those that can and should grow (pool keys below the low-water mark,
// counter and slotted keys with unallocated stock) and whose lock is free
// (driver.Maintainer.ReplenishAttempt).
func (c *Client) replenishAttempt(ctx context.Context, tx pgx.Tx, after holdfast.Key, limit int) (examined int, last holdfast.Key, added int, err error) {
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "replenish_scan"),
		after.ShopID, after.ItemID, after.LocationID, limit,
		string(c.cfg.Strategy), c.cfg.PoolCap, c.cfg.LowWaterPercent)
	if err != nil {
		return 0, last, 0, err
	}
	var wanted []holdfast.Key
	for rows.Next() {
		var k holdfast.Key
		var want bool
		if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &want); err != nil {
			return 0, last, 0, err
		}
		examined++
		last = k
		if want {
			wanted = append(wanted, k)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, last, 0, err
	}
	if len(wanted) == 0 {
		return examined, last, 0, nil
	}
	hashes := make([]int64, len(wanted))
	for i, k := range wanted {
		hashes[i] = keyHash(k)
	}
	lrows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "trylock_keys"), hashes)
	if err != nil {
		return 0, last, 0, err
	}
	idx, err := pgx.CollectRows(lrows, pgx.RowTo[int])
	if err != nil {
		return 0, last, 0, err
	}
	locked := make([]holdfast.Key, len(idx))
	for i, n := range idx {
		locked[i] = wanted[n-1]
	}
	if len(locked) == 0 {
		return examined, last, 0, nil
	}
	res, err := c.refill(ctx, tx, holdfast.RouteReplenish, locked)
	if err != nil {
		return 0, last, 0, err
	}
	for _, r := range res {
		if r.added > 0 {
			added += r.added
			c.cfg.Observer.Replenished(r.key, false, r.added)
		}
	}
	return examined, last, added, nil
}
