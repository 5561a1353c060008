package shadow

import (
	"context"
	"time"

	"github.com/holdfast/holdfast"
)

// Store is where the layer keeps its records, shared by every replica: the
// shops' modes and their audit trail, the comparison counters and the
// disagreement samples (PostgreSQL's migration 004: postgres/pgshadow.Store).
// It also lists the keys holdfast stocks for a shop (Reconcile).
// Implementations must be safe for concurrent use.
type Store interface {
	// Enroll adds shops in ModeLegacy; enrolled ones stay as they are.
	Enroll(ctx context.Context, shops []int64) error
	// ChangeMode, in one transaction, locks the shop's mode row and calls
	// decide with its mode, when it entered shadow (nil: not in shadow)
	// and the database's time; it stores the change decide returns (nil:
	// none). found is false, and decide not called, when the shop is not
	// enrolled. An error of decide is returned as it is.
	ChangeMode(ctx context.Context, shop int64, decide func(from Mode, since *time.Time, now time.Time) (*ModeChange, error)) (found bool, err error)
	// ModesRevision is the modes' revision: it moves with every change.
	ModesRevision(ctx context.Context) (int64, error)
	// Modes returns every enrolled shop's mode and the revision they
	// carry (0 when there are none).
	Modes(ctx context.Context) ([]ShopMode, int64, error)
	// AddComparisons adds counts to the counters and keeps samples, then
	// trims each sampled shop's samples to the newest samplesMax, in one
	// transaction.
	AddComparisons(ctx context.Context, counts []Counts, samples []Sample, samplesMax int) error
	// Counts returns the counters of every shop.
	Counts(ctx context.Context) ([]Counts, error)
	// Samples returns up to limit of a shop's newest samples.
	Samples(ctx context.Context, shop int64, limit int) ([]Sample, error)
	// StockedKeys returns up to n keys holdfast stocks for the shop.
	StockedKeys(ctx context.Context, shop int64, n int) ([]holdfast.Key, error)
}

// ModeChange is a mode change ChangeMode stores.
type ModeChange struct {
	From, To Mode
	// EnteringShadow: the shop's shadow period starts now.
	EnteringShadow bool
	// Reason goes to the audit trail.
	Reason string
	// Now is the time to record (an injected clock); nil: the database's.
	Now *time.Time
}

// Counts are the comparison counters of one shop, operation and kind: how
// many, and each side's latency histogram (one bucket per latency bound and one past them).
type Counts struct {
	ShopID           int64
	Op, Kind         string
	N                int64
	Legacy, Holdfast []int64
}
