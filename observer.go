package holdfast

import "time"

// Observer receives engine events; holdfast's metrics implement it. Methods
// must be safe for concurrent use and must not block.
type Observer interface {
	// Op reports one operation: which (OpReserve, …), its outcome (a short
	// code such as "held", "replayed", "insufficient_stock", "error") and
	// duration.
	Op(op, outcome string, d time.Duration)
	// Retry reports a transaction of operation op run again, by SQLSTATE
	// ("connection" for a lost connection).
	Retry(op, sqlstate string)
	// Replenished reports units added to a key's buffer, inline (on a
	// buyer's reservation) or in the background.
	Replenished(k Key, inline bool, units int)
	// Expired reports holds the sweeper expired.
	Expired(n int)
	// Claimed reports a claim and how long after its reservation it came.
	Claimed(holdAge time.Duration)
}

type nopObserver struct{}

func (nopObserver) Op(string, string, time.Duration) {}
func (nopObserver) Retry(string, string)             {}
func (nopObserver) Replenished(Key, bool, int)       {}
func (nopObserver) Expired(int)                      {}
func (nopObserver) Claimed(time.Duration)            {}
