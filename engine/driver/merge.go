package driver

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Merger is the merge attempt (engine/merge.go: MergeCheckouts).
type Merger[TTx comparable] interface {
	// MergeAttempt moves checkout from's held lines into checkout into, in
	// tx, in the driver's lock order: both hold rows first, in checkout
	// order (FOR UPDATE; a missing one is created or answered by the
	// plan), then into's buyer locks when it has a buyer, then the
	// reserved lines. It reads both holds, asks engine.PlanMerge what to
	// do and does it: from released with its lines record marked, into's
	// lines summed (or into created), into's buyer limits checked on the
	// sums after from has ended, from's reserved lines moved to into
	// (summed per key, into's expiry). No buffer, level or key lock is
	// touched: the units do not move. It answers into's hold (Replayed on
	// a replay), or PlanMerge's errors, or ErrRetry when into was created
	// meanwhile by someone else.
	MergeAttempt(ctx context.Context, tx TTx, own bool, shop int64, from, into uuid.UUID) (*holdfast.Hold, error)
}

// ErrIntoWaits is MergeAttempt's answer when into has no hold and the
// create inserted none: into waits for stock (or waited), or got a hold
// meanwhile. The engine asks the waitlist which (WaiterAnswer) in the same
// transaction, and answers a *holdfast.MergeIntoError or retries.
var ErrIntoWaits = errors.New("holdfast: merge destination has no hold to create")
