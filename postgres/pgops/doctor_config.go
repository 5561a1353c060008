package pgops

import (
	"github.com/holdfast/holdfast/postgres"
	"time"
)

// DoctorConfig configures Doctor. The zero value of every field means its
// default.
type DoctorConfig struct {
	// Engine runs the invariant check and supplies the default strategy,
	// pool cap and low-water mark. Nil means an engine with holdfast's
	// defaults on the same pool.
	Engine *postgres.Client
	// IdleInTransactionWarn and IdleInTransactionCritical grade sessions
	// idle in a transaction. Default to 5 seconds and 1 minute.
	IdleInTransactionWarn     time.Duration
	IdleInTransactionCritical time.Duration
	// TransactionWarn and TransactionCritical grade the oldest transaction
	// and the oldest snapshot holding back vacuum. Default to 1 minute and
	// 10 minutes.
	TransactionWarn     time.Duration
	TransactionCritical time.Duration
	// LockWaitWarn: sessions waiting on a lock for longer are a finding.
	// Defaults to 1 second.
	LockWaitWarn time.Duration
	// DeadPercentWarn and DeadPercentCritical grade a table's dead share
	// (with at least MinDeadTuples dead). Default to 20 and 50.
	DeadPercentWarn     float64
	DeadPercentCritical float64
	MinDeadTuples       int64
	// CheckTimeout bounds each check's queries. Defaults to 20 seconds.
	CheckTimeout time.Duration
	// Embedded: the database is holdfast's own private cluster (the CLI's
	// --data-dir), where only holdfast connects and every transaction it
	// runs is bounded with SET LOCAL. The role-level timeout advice, which
	// is for other clients of a shared server, is then reported ok rather
	// than as a warning about settings nobody chose. False (the zero
	// value) for any other server.
	Embedded bool
}

func (c DoctorConfig) withDefaults() DoctorConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.IdleInTransactionWarn, 5*time.Second)
	def(&c.IdleInTransactionCritical, time.Minute)
	def(&c.TransactionWarn, time.Minute)
	def(&c.TransactionCritical, 10*time.Minute)
	def(&c.LockWaitWarn, time.Second)
	def(&c.CheckTimeout, 20*time.Second)
	if c.DeadPercentWarn <= 0 {
		c.DeadPercentWarn = DeadPercentMaxDefault
	}
	if c.DeadPercentCritical <= 0 {
		c.DeadPercentCritical = 50
	}
	if c.MinDeadTuples <= 0 {
		c.MinDeadTuples = MinDeadTuplesDefault
	}
	return c
}
