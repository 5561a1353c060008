package driver

import (
	"context"

	"github.com/holdfast/holdfast"
)

// Maintainer is the attempts of the maintenance passes the engine runs
// (engine.Client's SweepOnce, PurgeOnce, Replenish): each is one batch in
// the transaction it is given, bounded by limit, in the driver's lock
// order; the engine decides how often, what to report and when to go on.
type Maintainer[TTx comparable] interface {
	// MaintenanceAttempt is Attempt for maintenance: fn runs once in a
	// transaction of the driver's own on the connections maintenance runs
	// on (a maintenance pool where the driver keeps one), committed.
	MaintenanceAttempt(ctx context.Context, route string, fn func(tx TTx) error) error
	// SweepAttempt expires at most limit held holds past their expiry and
	// gives their units back (to their keys' buffers where the key's lock
	// is free, else queued for the replenisher). It answers how many it
	// expired.
	SweepAttempt(ctx context.Context, tx TTx, limit int) (int, error)
	// PurgeAttempt deletes at most limit records of each kind the driver
	// keeps past their retention (hold outcomes, stock changes, ended
	// waits, and what else the database keeps), answering the largest
	// count of one kind.
	PurgeAttempt(ctx context.Context, tx TTx, limit int) (int, error)
	// ReplenishAttempt examines at most limit keys after after (key
	// order; the zero key: from the first) and refills those whose buffer
	// can and should grow and whose lock is free now, reporting each
	// refill to the Observer. It answers how many keys it examined, the
	// last of them, and the units it added.
	ReplenishAttempt(ctx context.Context, tx TTx, after holdfast.Key, limit int) (examined int, last holdfast.Key, added int, err error)
}
