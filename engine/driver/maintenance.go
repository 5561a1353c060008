package driver

import (
	"context"
	"time"

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

// MaintenanceStarter is a driver with resources of its own for the
// maintenance workers (PostgreSQL: the maintenance pool). The engine's
// Start calls StartMaintenance before it starts the workers — an error
// starts none — and its Stop calls StopMaintenance once they stopped.
type MaintenanceStarter interface {
	StartMaintenance(ctx context.Context) error
	StopMaintenance()
}

// ExpiryProber is a driver that can tell when the nearest held hold
// expires (one index probe): the engine's sweeper then wakes for it, and
// for the holds its client creates, rather than only at its interval.
type ExpiryProber interface {
	// NextExpiry answers the wait until the nearest held hold expires;
	// ok is false when no hold is held.
	NextExpiry(ctx context.Context) (d time.Duration, ok bool, err error)
}

// ChangedKeys is a driver whose background replenisher refills only the
// keys that changed — those queued in the database by releases and sweeps
// that could not refill them, and those the engine remembers its client
// reserved on — never a walk of every key (the engine's Replenish).
type ChangedKeys interface {
	// DequeueChangedKeys takes at most limit keys off the database's
	// queue of changed keys (shared by replicas).
	DequeueChangedKeys(ctx context.Context, limit int) ([]holdfast.Key, error)
	// RefillChangedKeys refills keys (in key order), skipping those whose
	// lock another transaction holds, answered as busy (the engine
	// remembers them for its next pass), reporting each refill to the
	// Observer.
	RefillChangedKeys(ctx context.Context, keys []holdfast.Key) (busy []holdfast.Key, err error)
}

// PoolTopUpper is a driver without ChangedKeys whose replenisher walks
// every key and refills pools only below the low-water mark: it also tops
// up the pool keys whose fast takes asked for it (engine.NotePoolTaken),
// before its walk, so a pool drained inside callers' transactions is
// refilled before it runs dry.
type PoolTopUpper interface {
	// TopUpPools refills keys' pools to their caps, in key order (the
	// order given), in one transaction of its own, skipping keys whose
	// lock another transaction holds, reporting each refill to the
	// Observer.
	TopUpPools(ctx context.Context, keys []holdfast.Key) error
}

// EventPurger is a driver that purges events past their retention in a
// statement of its own, outside PurgeAttempt's transaction (MySQL); the
// engine's PurgeOnce runs it after PurgeAttempt. It answers how many it
// deleted, at most limit.
type EventPurger interface {
	PurgeEvents(ctx context.Context, limit int) (int, error)
}
