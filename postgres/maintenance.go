package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/internal/maint"
)

// Start launches the background maintenance: the expiry sweeper (which also
// purges old outcome records), the event sequencer, the waitlist server and
// the replenisher, on the maintenance pool
// (WithMaintenancePool, or one Start creates with
// Config.MaintenanceConns connections), never on the client's pool. Each
// worker's first tick runs at once. The sweeper wakes at the nearest
// expiry it knows of (at most every ExpiryNoticeMin), and at once when this
// client creates a hold due before its next tick; the replenisher refills
// only keys that changed. Any number of clients, in any number of replicas,
// may run them at once. Start does not block; Stop ends them.
func (c *Client) Start(ctx context.Context) {
	c.maintMu.Lock()
	defer c.maintMu.Unlock()
	if c.maintPool == nil {
		if c.maintPoolOpt != nil {
			c.maintPool = c.maintPoolOpt
		} else {
			pc := c.pool.Config()
			pc.MaxConns = int32(c.cfg.MaintenanceConns)
			pc.MinConns = 0
			p, err := pgxpool.NewWithConfig(ctx, pc)
			if err != nil {
				// Only a bad configuration fails here (connecting is
				// lazy); the client pool's config was good.
				c.cfg.Logger.Error("maintenance pool", "err", err)
				return
			}
			c.maintPool, c.maintOwned = p, true
		}
	}
	if c.workers == nil {
		sweeper := &maint.Worker{Name: "sweeper", Interval: c.cfg.SweepInterval, Logger: c.cfg.Logger, Step: c.sweepStep, Next: c.untilNextExpiry}
		c.sweeper.Store(sweeper)
		replenisher := &maint.Worker{Name: "replenisher", Interval: c.cfg.ReplenishInterval, Logger: c.cfg.Logger, Step: c.replenishStep}
		c.replenisher.Store(replenisher)
		c.workers = []*maint.Worker{sweeper, replenisher}
		waitlister := &maint.Worker{Name: "waitlist", Interval: c.cfg.ReplenishInterval, Logger: c.cfg.Logger, Step: c.waitlistStep}
		c.waitlister.Store(waitlister)
		sequencing := &maint.Worker{Name: "sequencer", Interval: c.cfg.SweepInterval, Logger: c.cfg.Logger, Step: c.sequenceStep}
		c.sequencing.Store(sequencing)
		c.workers = append(c.workers, waitlister, sequencing)
		// Owed pre-orders a bounded stock change left (preorder.go).
		c.workers = append(c.workers, &maint.Worker{Name: "preorders", Interval: c.cfg.ReplenishInterval, Logger: c.cfg.Logger, Step: c.preorderStep})
	}
	for _, w := range c.workers {
		w.Start(ctx)
	}
}

// Stop ends the background maintenance and waits for it, bounded by ctx,
// then closes the maintenance pool Start created. Safe to call more than
// once and before Start.
func (c *Client) Stop(ctx context.Context) error {
	c.maintMu.Lock()
	workers := c.workers
	c.maintMu.Unlock()
	// Not under maintMu: a worker's step reads the pool under it.
	var errs []error
	for _, w := range workers {
		errs = append(errs, w.Stop(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.maintMu.Lock()
	defer c.maintMu.Unlock()
	if c.maintOwned && c.maintPool != nil {
		c.maintPool.Close()
	}
	c.maintPool, c.maintOwned = nil, false
	return nil
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

func (c *Client) sweepStep(ctx context.Context) (bool, error) {
	n, err := c.SweepOnce(ctx)
	if err != nil {
		return false, err
	}
	// The events of what this tick expired, and of everything since the
	// last tick, are sequenced beside the sweep, on the sequencer's own
	// connection: an expiry storm's events do not slow its sweep.
	if w := c.sequencing.Load(); w != nil {
		w.Kick()
	}
	p, err := c.PurgeOnce(ctx)
	if err != nil {
		return false, err
	}
	return n == c.cfg.SweepBatch || p == c.cfg.SweepBatch, nil
}

// sequenceStep is the sequencer's tick: kicked by every sweeper tick, and
// at least every SweepInterval.
func (c *Client) sequenceStep(ctx context.Context) (bool, error) {
	q, err := c.SequenceEvents(ctx)
	return q >= holdfast.EventSequencePassMax, err
}

// untilNextExpiry is the sweeper's wait before its next tick: until the
// nearest held hold expires (one index probe), at least ExpiryNoticeMin;
// 0 when no hold is held or the probe failed (the interval applies).
func (c *Client) untilNextExpiry() time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StatementTimeout)
	defer cancel()
	var us *int64
	if err := c.maintenance().QueryRow(ctx, c.q(ctx, holdfast.RouteSweep, "next_expiry"), c.now()).Scan(&us); err != nil || us == nil {
		c.sweepNextAt.Store(time.Now().Add(c.cfg.SweepInterval).UnixMicro())
		return 0
	}
	// Wake just after the expiry: sweep_expire takes holds strictly past it.
	d := max(time.Duration(*us)*time.Microsecond+time.Millisecond, holdfast.ExpiryNoticeMin)
	c.sweepNextAt.Store(time.Now().Add(min(d, c.cfg.SweepInterval)).UnixMicro())
	return d
}

// noteHold tells the sweeper about a hold this client created: when it is
// due before the sweeper's next tick, the sweeper wakes for it.
func (c *Client) noteHold(h *holdfast.Hold) {
	sweeper := c.sweeper.Load()
	if sweeper == nil || h == nil {
		return
	}
	var now time.Time
	if c.cfg.Now != nil {
		now = c.cfg.Now()
	} else {
		now = time.Now()
	}
	d := h.ExpiresAt.Sub(now) + time.Millisecond
	at := time.Now().Add(d).UnixMicro()
	if next := c.sweepNextAt.Load(); next != 0 && at >= next {
		return
	}
	c.sweepNextAt.Store(at)
	sweeper.WakeIn(max(d, holdfast.ExpiryNoticeMin))
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
const DirtyKeysMax = 100_000

// noteReserved remembers keys this client reserved on, for the replenisher.
func (c *Client) noteReserved(shop int64, lines []holdfast.Line) {
	for _, l := range lines {
		if c.dirtyN.Load() >= DirtyKeysMax {
			return
		}
		if _, loaded := c.dirty.LoadOrStore(holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}, struct{}{}); !loaded {
			// A full batch of changed keys is worth a pass now rather
			// than at the next interval.
			if c.dirtyN.Add(1) == ReplenishBatch {
				if w := c.replenisher.Load(); w != nil {
					w.Kick()
				}
			}
		}
	}
}

// PoolTopUpDivisor sets when a pool key's takes ask the replenisher for a
// top-up: after this process has taken a 1/PoolTopUpDivisor share of the
// key's cap from it since it last asked (250 units of a 1,000-unit pool).
const PoolTopUpDivisor = 4

// notePoolTaken counts q units this process took from pool key k's rows
// (cap its pool cap) and, once they reach a quarter of the cap, queues k for
// the replenisher and wakes it, so that a pool drained faster than
// ReplenishInterval is topped up in the replenisher's own short
// transaction before it runs dry. A dry pool sends every reserver to the
// slow path, where a caller's transaction (ReserveTx) takes the key's lock
// and keeps it until the caller commits: the reservers of the key then
// queue one caller's transaction at a time (issue #29 item 4: pool at
// hot-tx/64 had 23–35 backends in Lock:advisory). Without started workers
// it only counts.
func (c *Client) notePoolTaken(k holdfast.Key, q, cap int) {
	v, ok := c.poolTaken.Load(k)
	if !ok {
		if c.poolTakenN.Load() >= DirtyKeysMax {
			return // bounded: past it, the replenisher's interval and the slow path
		}
		var loaded bool
		if v, loaded = c.poolTaken.LoadOrStore(k, new(atomic.Int64)); !loaded {
			c.poolTakenN.Add(1)
		}
	}
	n := v.(*atomic.Int64)
	if n.Add(int64(q)) < int64(max(1, cap/PoolTopUpDivisor)) {
		return
	}
	n.Store(0)
	w := c.replenisher.Load()
	if w == nil {
		return
	}
	c.noteReserved(k.ShopID, []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID}})
	w.Kick()
}

// replenishStep is one bounded batch of the background replenisher: the
// keys that changed — queued by releases and sweeps that could not refill
// them (replenish_queue, shared by replicas), and keys this client reserved
// on — never a walk of every key. It reports more when a batch was full.
func (c *Client) replenishStep(ctx context.Context) (bool, error) {
	keys, err := c.changedKeys(ctx)
	if err != nil || len(keys) == 0 {
		return false, err
	}
	if err := c.foldHeld(ctx, keys); err != nil {
		return false, err
	}
	_, busy, err := c.refillKeys(ctx, keys)
	if err != nil {
		// Not lost: remembered for the next pass.
		busy = keys
	}
	for _, k := range busy {
		c.noteReserved(k.ShopID, []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID}})
	}
	return err == nil && len(keys) == ReplenishBatch, err
}

// changedKeys takes up to ReplenishBatch changed keys: queued ones first,
// then this client's remembered ones, in key order.
func (c *Client) changedKeys(ctx context.Context) ([]holdfast.Key, error) {
	var keys []holdfast.Key
	err := c.run(ctx, c.maintenance(), holdfast.RouteReplenish, true, true, func(tx pgx.Tx, _ int) error {
		rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "dequeue_keys"), ReplenishBatch)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, pgx.RowToStructByPos[holdfast.Key])
		return err
	})
	if err != nil {
		return nil, err
	}
	seen := make(map[holdfast.Key]bool, len(keys))
	for _, k := range keys {
		seen[k] = true
	}
	c.dirty.Range(func(k, _ any) bool {
		if len(keys) >= ReplenishBatch {
			return false
		}
		c.dirty.Delete(k)
		c.dirtyN.Add(-1)
		if key := k.(holdfast.Key); !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
		return true
	})
	slices.SortFunc(keys, func(a, b holdfast.Key) int {
		return cmp.Or(cmp.Compare(a.ShopID, b.ShopID), cmp.Compare(a.ItemID, b.ItemID), cmp.Compare(a.LocationID, b.LocationID))
	})
	return keys, nil
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
