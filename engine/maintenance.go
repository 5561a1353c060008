package engine

import (
	"context"

	"github.com/holdfast/holdfast"
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
		c.d.KickWaitlist()
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
	return max(n, a), nil
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
