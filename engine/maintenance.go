package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
	"github.com/holdfast/holdfast/internal/maint"
)

// ReplenishBatch bounds the keys one replenisher transaction examines.
const ReplenishBatch = 500

// maintain runs attempts of fn in maintenance transactions of the driver's
// own under the engine's one retry policy.
func (c *Client[TTx]) maintain(ctx context.Context, route string, fn func(tx TTx) error) error {
	return c.core.Run(ctx, route, true, true, nil, func(int) error {
		return c.d.MaintenanceAttempt(ctx, route, fn)
	})
}

// SweepOnce expires one batch (at most Config.SweepBatch) of holds past
// their expiry, in one short transaction, and returns how many it expired.
// Their units go back to their keys' buffers where the key's lock is free;
// the waitlist server is woken for them.
func (c *Client[TTx]) SweepOnce(ctx context.Context) (int, error) {
	var n int
	err := c.maintain(ctx, holdfast.RouteSweep, func(tx TTx) error {
		var err error
		n, err = c.d.SweepAttempt(ctx, tx, c.cfg.SweepBatch)
		return err
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		c.cfg.Observer.Expired(n)
		c.kickWaitlist()
	}
	return n, nil
}

// PurgeOnce deletes one batch (at most Config.SweepBatch of each kind) of
// the records kept past their retention — hold outcomes, stock changes and
// ended waits older than Config.OutcomeRetention, and what else the
// database keeps — in one transaction, then one batch of the audit entries
// older than Config.AuditRetention in another, and returns the largest
// count of one kind.
func (c *Client[TTx]) PurgeOnce(ctx context.Context) (int, error) {
	var n int
	err := c.maintain(ctx, holdfast.RoutePurge, func(tx TTx) error {
		var err error
		n, err = c.d.PurgeAttempt(ctx, tx, c.cfg.SweepBatch)
		return err
	})
	if err != nil {
		return 0, err
	}
	// The audit log's own horizon (Config.AuditRetention), in its own
	// transaction.
	a, err := c.PurgeAuditOnce(ctx)
	if err != nil {
		return n, err
	}
	n = max(n, a)
	if p, ok := c.d.(driver.EventPurger); ok {
		// Events past their retention, in the driver's own statement.
		e, err := p.PurgeEvents(ctx, c.cfg.SweepBatch)
		if err != nil {
			return n, err
		}
		n = max(n, e)
	}
	return n, nil
}

// Replenish walks every key in batches (ReplenishBatch keys a transaction)
// and refills the buffers that can and should grow (pool keys below the
// low-water mark, counter and slotted keys with unallocated stock),
// skipping keys whose lock another transaction holds. It returns the units
// added. It is the on-demand full pass (tests, operators, recovery).
func (c *Client[TTx]) Replenish(ctx context.Context) (int, error) {
	var cursor holdfast.Key
	added := 0
	for {
		var examined, pageAdded int
		var last holdfast.Key
		err := c.maintain(ctx, holdfast.RouteReplenish, func(tx TTx) error {
			var err error
			examined, last, pageAdded, err = c.d.ReplenishAttempt(ctx, tx, cursor, ReplenishBatch)
			return err
		})
		if err != nil {
			return added, err
		}
		added += pageAdded
		if examined < ReplenishBatch {
			return added, nil
		}
		cursor = last
	}
}

// DirtyKeysMax bounds the keys a client remembers for its replenisher
// between passes; past it, keys are not remembered (their next short
// reservation refills them inline).
const DirtyKeysMax = 100_000

// maintenance is a client's background workers — the expiry sweeper
// (which also purges old records), the replenisher, the waitlist server,
// the event sequencer and the pre-order converter — and what schedules
// them: the sweeper's view of the nearest expiry (with a driver.ExpiryProber)
// and the keys changed since the replenisher's last pass (with a
// driver.ChangedKeys).
type maintenance struct {
	mu      sync.Mutex
	workers []*maint.Worker

	sweeper     atomic.Pointer[maint.Worker]
	replenisher atomic.Pointer[maint.Worker]
	waitlister  atomic.Pointer[maint.Worker]
	sequencer   atomic.Pointer[maint.Worker]

	prober      driver.ExpiryProber // nil: the sweeper ticks at its interval
	sweepNextAt atomic.Int64        // unix µs of the sweeper's next tick; 0: none planned

	changed changedKeySet

	poolTaken  sync.Map     // holdfast.Key -> *atomic.Int64: units taken since the last top-up (NotePoolTaken)
	poolTakenN atomic.Int64 // poolTaken's entries, at most DirtyKeysMax

	topUp topUpSet
}

// topUpSet is the pool keys whose fast takes asked for a top-up since the
// replenisher's last pass, at most DirtyKeysMax; used only when the driver
// is a driver.PoolTopUpper. Safe for concurrent use.
type topUpSet struct {
	d    driver.PoolTopUpper
	keys sync.Map // Key -> struct{}
	n    atomic.Int64
}

// take removes and returns at most limit keys, in key order.
func (s *topUpSet) take(limit int) []holdfast.Key {
	var keys []holdfast.Key
	s.keys.Range(func(k, _ any) bool {
		if len(keys) >= limit {
			return false
		}
		s.keys.Delete(k)
		s.n.Add(-1)
		keys = append(keys, k.(holdfast.Key))
		return true
	})
	slices.SortFunc(keys, func(a, b holdfast.Key) int {
		return cmp.Or(cmp.Compare(a.ShopID, b.ShopID), cmp.Compare(a.ItemID, b.ItemID), cmp.Compare(a.LocationID, b.LocationID))
	})
	return keys
}

// changedKeySet is the keys a client reserved on since its replenisher's
// last pass, at most DirtyKeysMax; used only when the driver is a
// driver.ChangedKeys. Safe for concurrent use.
type changedKeySet struct {
	d    driver.ChangedKeys
	keys sync.Map // Key -> struct{}
	n    atomic.Int64
}

// Start launches the background maintenance: the expiry sweeper (which also
// purges old records), the event sequencer, the waitlist server, the
// replenisher and the pre-order converter, on the driver's maintenance
// connections (driver.MaintenanceStarter: PostgreSQL's maintenance pool).
// Each worker's first tick runs at once. With a driver.ExpiryProber the
// sweeper wakes at the nearest expiry (at most every
// holdfast.ExpiryNoticeMin), and at once when this client creates a hold
// due before its next tick; with a driver.ChangedKeys the replenisher
// refills only keys that changed, else it walks every key (Replenish). Any
// number of clients, in any number of replicas, may run them at once.
// Start does not block; Stop ends them.
func (c *Client[TTx]) Start(ctx context.Context) {
	m := &c.maint
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := c.d.(driver.MaintenanceStarter); ok {
		if err := s.StartMaintenance(ctx); err != nil {
			c.cfg.Logger.Error("maintenance start", "err", err)
			return
		}
	}
	if m.workers == nil {
		worker := func(name string, interval time.Duration, step func(context.Context) (bool, error)) *maint.Worker {
			return &maint.Worker{Name: name, Interval: interval, Logger: c.cfg.Logger, Step: step}
		}
		sweeper := worker("sweeper", c.cfg.SweepInterval, c.sweepStep)
		if m.prober != nil {
			sweeper.Next = c.untilNextExpiry
		}
		replenisher := worker("replenisher", c.cfg.ReplenishInterval, c.replenishStep)
		waitlister := worker("waitlist", c.cfg.ReplenishInterval, func(ctx context.Context) (bool, error) { return WaitlistStep(c, ctx) })
		sequencer := worker("sequencer", c.cfg.SweepInterval, c.sequenceStep)
		// Owed pre-orders a bounded stock change left (preorder.go).
		preorders := worker("preorders", c.cfg.ReplenishInterval, func(ctx context.Context) (bool, error) {
			_, err := c.ConvertPreordersOnce(ctx)
			return false, err
		})
		m.sweeper.Store(sweeper)
		m.replenisher.Store(replenisher)
		m.waitlister.Store(waitlister)
		m.sequencer.Store(sequencer)
		m.workers = []*maint.Worker{sweeper, replenisher, waitlister, sequencer, preorders}
	}
	for _, w := range m.workers {
		w.Start(ctx)
	}
}

// Stop ends the background maintenance and waits for it, bounded by ctx,
// then releases the driver's maintenance connections
// (driver.MaintenanceStarter). Safe to call more than once and before
// Start.
func (c *Client[TTx]) Stop(ctx context.Context) error {
	m := &c.maint
	m.mu.Lock()
	workers := m.workers
	m.mu.Unlock()
	// Not under mu: a worker's step may need the driver's maintenance
	// connections, which StopMaintenance guards.
	var errs []error
	for _, w := range workers {
		errs = append(errs, w.Stop(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if s, ok := c.d.(driver.MaintenanceStarter); ok {
		m.mu.Lock()
		defer m.mu.Unlock()
		s.StopMaintenance()
	}
	return nil
}

// KickWaitlist wakes c's waitlist server, if c runs one: units may have
// come back. A function, not a method: the drivers' clients embed Client
// and must not offer it.
func KickWaitlist[TTx comparable](c *Client[TTx]) { c.kickWaitlist() }

func (c *Client[TTx]) kickWaitlist() {
	if w := c.maint.waitlister.Load(); w != nil {
		w.Kick()
	}
}

// sweepStep is the sweeper's tick: one sweep batch, the sequencer kicked,
// one purge batch; more when either batch was full.
func (c *Client[TTx]) sweepStep(ctx context.Context) (bool, error) {
	n, err := c.SweepOnce(ctx)
	if err != nil {
		return false, err
	}
	// The events of what this tick expired, and of everything since the
	// last tick, are sequenced beside the sweep, on the sequencer's own
	// connection: an expiry storm's events do not slow its sweep.
	if w := c.maint.sequencer.Load(); w != nil {
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
func (c *Client[TTx]) sequenceStep(ctx context.Context) (bool, error) {
	q, err := c.SequenceEvents(ctx)
	return q >= holdfast.EventSequencePassMax, err
}

// untilNextExpiry is the sweeper's wait before its next tick: until the
// nearest held hold expires (the driver's probe), at least
// ExpiryNoticeMin; 0 when no hold is held or the probe failed (the
// interval applies).
func (c *Client[TTx]) untilNextExpiry() time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StatementTimeout)
	defer cancel()
	d, ok, err := c.maint.prober.NextExpiry(ctx)
	if err != nil || !ok {
		c.maint.sweepNextAt.Store(time.Now().Add(c.cfg.SweepInterval).UnixMicro())
		return 0
	}
	// Wake just after the expiry: a sweep takes holds strictly past it.
	d = max(d+time.Millisecond, holdfast.ExpiryNoticeMin)
	c.maint.sweepNextAt.Store(time.Now().Add(min(d, c.cfg.SweepInterval)).UnixMicro())
	return d
}

// noteReserved tells the maintenance about a hold this client's own
// transaction created on lines: the keys are the replenisher's to top up,
// the expiry the sweeper's to wait for.
func (c *Client[TTx]) noteReserved(h *holdfast.Hold, shop int64, lines []holdfast.Line) {
	c.noteChanged(shop, lines)
	c.noteHold(h)
}

// noteHold tells the sweeper about a hold this client created: when it is
// due before the sweeper's next tick, the sweeper wakes for it. Only with
// a driver.ExpiryProber: without one, the sweeper keeps its interval.
func (c *Client[TTx]) noteHold(h *holdfast.Hold) {
	if c.maint.prober == nil || h == nil {
		return
	}
	sweeper := c.maint.sweeper.Load()
	if sweeper == nil {
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
	if next := c.maint.sweepNextAt.Load(); next != 0 && at >= next {
		return
	}
	c.maint.sweepNextAt.Store(at)
	sweeper.WakeIn(max(d, holdfast.ExpiryNoticeMin))
}

// noteChanged remembers keys this client reserved on, for the replenisher
// of changed keys (driver.ChangedKeys; without one, nothing is kept).
func (c *Client[TTx]) noteChanged(shop int64, lines []holdfast.Line) {
	m := &c.maint.changed
	if m.d == nil {
		return
	}
	for _, l := range lines {
		if m.n.Load() >= DirtyKeysMax {
			return
		}
		if _, loaded := m.keys.LoadOrStore(holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}, struct{}{}); !loaded {
			// A full batch of changed keys is worth a pass now rather
			// than at the next interval.
			if m.n.Add(1) == ReplenishBatch {
				if w := c.maint.replenisher.Load(); w != nil {
					w.Kick()
				}
			}
		}
	}
}

// replenishStep is one bounded batch of the background replenisher. With
// a driver.ChangedKeys: the keys that changed — queued in the database,
// and keys this client reserved on — never a walk of every key, and more
// when a batch was full. Without: the walk of every key (Replenish).
func (c *Client[TTx]) replenishStep(ctx context.Context) (bool, error) {
	ck := c.maint.changed.d
	if ck == nil {
		if tu := c.maint.topUp.d; tu != nil {
			// Asked-for top-ups first: the walk refills pools only
			// below the low-water mark, which a pool drained by 64
			// callers' transactions passes on its way to dry.
			if keys := c.maint.topUp.take(ReplenishBatch); len(keys) > 0 {
				// A pass that topped up does not walk too: the walk
				// reads every key's held units, and a hot pool asks
				// every quarter of its cap. More keys waiting: again.
				err := tu.TopUpPools(ctx, keys)
				return err == nil && c.maint.topUp.n.Load() > 0, err
			}
		}
		_, err := c.Replenish(ctx)
		return false, err
	}
	keys, err := c.changedKeys(ctx, ck)
	if err != nil || len(keys) == 0 {
		return false, err
	}
	busy, err := ck.RefillChangedKeys(ctx, keys)
	// Not lost: remembered for the next pass.
	for _, k := range busy {
		c.noteChanged(k.ShopID, []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID}})
	}
	return err == nil && len(keys) == ReplenishBatch, err
}

// ReplenishChangedOnce is one batch of the background replenisher
// (replenishStep): whether a full batch was done. A function, not a method:
// the drivers' clients embed Client and must not offer it.
func ReplenishChangedOnce[TTx comparable](c *Client[TTx], ctx context.Context) (bool, error) {
	return c.replenishStep(ctx)
}

// NoteChanged remembers keys for c's replenisher of changed keys, as a
// reservation of c's own does. ForgetChanged drops what c remembers. For
// the drivers' tests; functions, not methods, as ReplenishChangedOnce.
func NoteChanged[TTx comparable](c *Client[TTx], shop int64, lines []holdfast.Line) {
	c.noteChanged(shop, lines)
}

// ForgetChanged: see NoteChanged.
func ForgetChanged[TTx comparable](c *Client[TTx]) {
	c.maint.changed.keys.Clear()
	c.maint.changed.n.Store(0)
}

// changedKeys takes up to ReplenishBatch changed keys: queued ones first,
// then this client's remembered ones, in key order.
func (c *Client[TTx]) changedKeys(ctx context.Context, ck driver.ChangedKeys) ([]holdfast.Key, error) {
	keys, err := ck.DequeueChangedKeys(ctx, ReplenishBatch)
	if err != nil {
		return nil, err
	}
	m := &c.maint.changed
	seen := make(map[holdfast.Key]bool, len(keys))
	for _, k := range keys {
		seen[k] = true
	}
	m.keys.Range(func(k, _ any) bool {
		if len(keys) >= ReplenishBatch {
			return false
		}
		m.keys.Delete(k)
		m.n.Add(-1)
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

// PoolTopUpDivisor sets when a pool key's takes ask the replenisher for a
// top-up: after this process has taken a 1/PoolTopUpDivisor share of the
// key's cap from it since it last asked (250 units of a 1,000-unit pool).
const PoolTopUpDivisor = 4

// NotePoolTaken counts q units c took from pool key k's rows (cap its pool
// cap) and, once they reach a quarter of the cap, remembers k for the
// replenisher and wakes it, so that a pool drained faster than
// ReplenishInterval is topped up in the replenisher's own short transaction
// before it runs dry. A dry pool sends every reserver to the slow path,
// where a caller's transaction (ReserveTx) takes the key's lock and keeps it
// until the caller commits: the key's reservers then queue one caller's
// transaction at a time (issue #29 item 4: pool at hot-tx/64 had 23–35
// backends in Lock:advisory). Without started workers it only counts. A
// driver's fast pool take calls it (the takes inside callers' transactions
// are never seen by the engine).
func NotePoolTaken[TTx comparable](c *Client[TTx], k holdfast.Key, q, cap int) {
	m := &c.maint
	v, ok := m.poolTaken.Load(k)
	if !ok {
		if m.poolTakenN.Load() >= DirtyKeysMax {
			return // bounded: past it, the replenisher's interval and the slow path
		}
		var loaded bool
		if v, loaded = m.poolTaken.LoadOrStore(k, new(atomic.Int64)); !loaded {
			m.poolTakenN.Add(1)
		}
	}
	n := v.(*atomic.Int64)
	if n.Add(int64(q)) < int64(max(1, cap/PoolTopUpDivisor)) {
		return
	}
	n.Store(0)
	w := m.replenisher.Load()
	if w == nil {
		return
	}
	c.noteChanged(k.ShopID, []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID}})
	if s := &m.topUp; s.d != nil && s.n.Load() < DirtyKeysMax {
		if _, loaded := s.keys.LoadOrStore(k, struct{}{}); !loaded {
			s.n.Add(1)
		}
	}
	w.Kick()
}
