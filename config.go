package holdfast

import (
	"log/slog"
	"time"
)

// Bounds and defaults. Each bound is enforced on every call; see Config for
// the ones a deployment can change.
const (
	// HoldTTLDefault is a hold's lifetime when ReserveParams.TTL is zero.
	HoldTTLDefault = 15 * time.Minute
	// HoldTTLMin is the shortest TTL accepted.
	HoldTTLMin = time.Second
	// HoldLifetimeMaxDefault caps a hold's total lifetime, extensions
	// included.
	HoldLifetimeMaxDefault = time.Hour
	// LinesPerCartMaxDefault bounds the lines of one reservation.
	LinesPerCartMaxDefault = 100
	// QuantityMaxDefault bounds the quantity of one line.
	QuantityMaxDefault = 10_000
	// AvailableMax is the largest stock level of one key.
	AvailableMax = 1<<31 - 1
	// PoolCapDefault is the row-per-unit pool's size per key.
	PoolCapDefault = 1000
	// SlotsDefault is the number of counter rows of a slotted key.
	SlotsDefault = 64
	// SweepBatchDefault bounds the holds one sweeper transaction expires.
	SweepBatchDefault = 500
	// OutcomeRetentionDefault is how long outcome records are kept.
	OutcomeRetentionDefault = 24 * time.Hour
	// LinesPerCartLimit is the largest Config.LinesPerCartMax accepted.
	LinesPerCartLimit = 10_000
	// QuantityLimit is the largest Config.QuantityMax accepted: a line's
	// quantity is stored (and combined) as a 32-bit integer.
	QuantityLimit = AvailableMax
	// PoolCapLimit is the largest pool cap, in Config and per key.
	PoolCapLimit = 1_000_000
	// SlotsLimit is the largest Config.Slots accepted.
	SlotsLimit = 1024
	// SweepBatchLimit is the largest Config.SweepBatch accepted.
	SweepBatchLimit = 100_000
	// RetryLimit is the largest Config.RetryMax accepted.
	RetryLimit = 100
	// MaintenanceConnsDefault and MaintenanceConnsLimit size the
	// maintenance pool Start creates.
	MaintenanceConnsDefault = 2
	MaintenanceConnsLimit   = 32
	// ExpiryNoticeMin is the shortest wait between two sweeps that the
	// nearest expiry schedules: the bound on the sweeper's cost when holds
	// come due one after another.
	ExpiryNoticeMin = 100 * time.Millisecond
	// CombineLockWaitDefault is a combined batch's lock wait.
	CombineLockWaitDefault = 100 * time.Millisecond
)

// Config configures an engine (postgres.New, mysql.New). The zero value of
// every field means its default.
type Config struct {
	// HoldTTLDefault is the TTL of a reservation that names none. Defaults
	// to 15 minutes.
	HoldTTLDefault time.Duration
	// HoldLifetimeMax caps a hold's total lifetime and so also the TTL of
	// Reserve and Extend. Defaults to 1 hour.
	HoldLifetimeMax time.Duration
	// LinesPerCartMax bounds the lines of a reservation. Defaults to 100.
	LinesPerCartMax int
	// QuantityMax bounds one line's quantity. Defaults to 10,000; at most
	// QuantityLimit.
	QuantityMax int
	// Strategy is the allocation strategy of keys without an override.
	// Defaults to StrategyBatch: the single counter row, combined under
	// contention.
	Strategy Strategy
	// PoolCap is the pool size of pool keys without an override. Defaults
	// to 1,000.
	PoolCap int
	// Slots is the number of counter rows of a slotted key. Defaults to 64.
	Slots int
	// LowWaterPercent: the replenisher refills pool keys below this percent
	// of their cap. Defaults to 30.
	LowWaterPercent int
	// SweepBatch bounds the holds one sweeper transaction expires. Defaults
	// to 500.
	SweepBatch int
	// OutcomeRetention is how long a hold's outcome is kept after it ends.
	// Defaults to 24 hours.
	OutcomeRetention time.Duration
	// EventRetention is how long a sequenced event stays in the feed
	// (Events) before the sweeper purges it, in batches of SweepBatch.
	// Defaults to EventRetentionDefault (24 hours). An event a webhook
	// endpoint of its shop has not received yet stays until
	// EventRetentionMax.
	EventRetention time.Duration
	// EventRetentionMax is the hard cap on keeping an event for a webhook
	// endpoint that lags behind: past it the event is purged anyway, and
	// the endpoint records the gap as a dead letter. Defaults to
	// EventRetentionMaxDefault (7 days); never less than EventRetention.
	EventRetentionMax time.Duration
	// AuditRetention is how long an audit entry (Audit) is kept before the
	// maintenance workers' purge deletes it, in batches of SweepBatch.
	// Defaults to AuditRetentionDefault (90 days).
	AuditRetention time.Duration
	// SweepInterval and ReplenishInterval pace the maintenance workers
	// started by Start. Default to 30 seconds and 5 seconds.
	SweepInterval     time.Duration
	ReplenishInterval time.Duration
	// RetryMax bounds how often one operation re-runs its transaction after
	// a deadlock, serialization failure, lock timeout or lost connection.
	// Defaults to 8; at most RetryLimit; -1 means no retries.
	RetryMax int
	// LockTimeout, StatementTimeout and IdleInTransactionTimeout are set
	// (SET LOCAL) in every transaction the client opens itself. Default to
	// 2s, 5s and 15s. The …Tx operations leave the caller's settings alone.
	LockTimeout              time.Duration
	StatementTimeout         time.Duration
	IdleInTransactionTimeout time.Duration
	// MaintenanceConns bounds the maintenance pool Start creates. Defaults
	// to 2; at most MaintenanceConnsLimit.
	MaintenanceConns int
	// CombineLockWait bounds how long a combined batch waits for a counter
	// row another transaction holds (a caller's ReserveTx doing work before
	// its commit); past it the batch's requests take the plain path, where
	// only the requests of that key wait. Defaults to CombineLockWaitDefault
	// and never exceeds LockTimeout. A combined claim batch (PostgreSQL)
	// waits as long for a key's level row, then its claims take the plain
	// path likewise.
	CombineLockWait time.Duration
	// WaitMax bounds ReserveParams.Wait, how long a short reservation may
	// wait in a key's queue for units to come back. Defaults to
	// WaitMaxDefault; at most WaitMaxLimit.
	WaitMax time.Duration
	// Now replaces the database clock, for tests. Nil (the default) uses
	// the database's clock_timestamp(), which is authoritative.
	Now func() time.Time
	// Logger receives maintenance and retry logs. Defaults to slog.Default().
	Logger *slog.Logger
	// Observer receives engine events for metrics. Nil is none.
	Observer Observer
	// BuyerSecret keys the HMAC that buyer ids are stored as (at least
	// BuyerSecretMinLen bytes). Empty (the default): a random secret the
	// first engine generates and stores in the database, shared by every
	// replica (PostgreSQL holdfast_secrets, MySQL holdfast_secrets).
	BuyerSecret []byte
}

// Validate checks every bound of a Config with defaults filled in;
// postgres.New refuses a Config that fails it, with an *ArgumentError naming the field.
func (c Config) Validate() error {
	intIn := func(field string, v, lo, hi int) error {
		if v < lo || v > hi {
			return NewArgumentError("Config."+field, "must be between %d and %d, got %d", lo, hi, v)
		}
		return nil
	}
	positive := func(field string, d time.Duration) error {
		if d <= 0 {
			return NewArgumentError("Config."+field, "must be positive, got %v", d)
		}
		return nil
	}
	switch {
	case !c.Strategy.Valid():
		return NewArgumentError("Config.Strategy", "unknown strategy %q", c.Strategy)
	case c.HoldLifetimeMax < HoldTTLMin:
		return NewArgumentError("Config.HoldLifetimeMax", "must be at least %v", HoldTTLMin)
	case c.HoldTTLDefault < HoldTTLMin || c.HoldTTLDefault > c.HoldLifetimeMax:
		return NewArgumentError("Config.HoldTTLDefault", "must be between %v and HoldLifetimeMax (%v)", HoldTTLMin, c.HoldLifetimeMax)
	}
	for _, err := range []error{
		intIn("LinesPerCartMax", c.LinesPerCartMax, 1, LinesPerCartLimit),
		intIn("QuantityMax", c.QuantityMax, 1, QuantityLimit),
		intIn("PoolCap", c.PoolCap, 1, PoolCapLimit),
		intIn("Slots", c.Slots, 1, SlotsLimit),
		intIn("LowWaterPercent", c.LowWaterPercent, 1, 100),
		intIn("SweepBatch", c.SweepBatch, 1, SweepBatchLimit),
		intIn("RetryMax", c.RetryMax, -1, RetryLimit),
		intIn("MaintenanceConns", c.MaintenanceConns, 1, MaintenanceConnsLimit),
		positive("OutcomeRetention", c.OutcomeRetention),
		positive("EventRetention", c.EventRetention),
		positive("EventRetentionMax", c.EventRetentionMax),
		positive("AuditRetention", c.AuditRetention),
		positive("SweepInterval", c.SweepInterval),
		positive("ReplenishInterval", c.ReplenishInterval),
		positive("LockTimeout", c.LockTimeout),
		positive("StatementTimeout", c.StatementTimeout),
		positive("IdleInTransactionTimeout", c.IdleInTransactionTimeout),
		positive("CombineLockWait", c.CombineLockWait),
		validWaitMax(c.WaitMax),
		ValidateBuyerSecret(c.BuyerSecret),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.HoldTTLDefault, HoldTTLDefault)
	def(&c.HoldLifetimeMax, HoldLifetimeMaxDefault)
	defInt(&c.LinesPerCartMax, LinesPerCartMaxDefault)
	defInt(&c.QuantityMax, QuantityMaxDefault)
	if c.Strategy == "" {
		c.Strategy = StrategyBatch
	}
	defInt(&c.PoolCap, PoolCapDefault)
	defInt(&c.Slots, SlotsDefault)
	defInt(&c.LowWaterPercent, 30)
	defInt(&c.SweepBatch, SweepBatchDefault)
	def(&c.OutcomeRetention, OutcomeRetentionDefault)
	def(&c.EventRetention, EventRetentionDefault)
	def(&c.EventRetentionMax, EventRetentionMaxDefault)
	def(&c.AuditRetention, AuditRetentionDefault)
	c.EventRetentionMax = max(c.EventRetentionMax, c.EventRetention)
	def(&c.SweepInterval, 30*time.Second)
	def(&c.ReplenishInterval, 5*time.Second)
	defInt(&c.RetryMax, 8)
	def(&c.LockTimeout, 2*time.Second)
	def(&c.StatementTimeout, 5*time.Second)
	def(&c.IdleInTransactionTimeout, 15*time.Second)
	def(&c.CombineLockWait, CombineLockWaitDefault)
	defInt(&c.MaintenanceConns, MaintenanceConnsDefault)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}
