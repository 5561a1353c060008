package driver

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Reservation is a validated holdfast.ReserveParams, as the engine hands it
// to a driver's reserve attempts.
type Reservation struct {
	Shop     int64
	Checkout uuid.UUID
	Lines    []holdfast.Line // sorted by (item, location), the one lock order
	LinesRaw []byte          // canonical JSON of Lines
	TTL      time.Duration
	Buyer    string // ReserveParams.BuyerID
	// BuyerHash is Buyer's keyed hash, computed before the transaction
	// begins; nil without a buyer.
	BuyerHash []byte
}

// TakeMode is how a reserve attempt gets units from the keys' buffers: the
// engine picks it from the attempt's slowness level.
type TakeMode int

const (
	// TakeFast takes without waiting on other reservers (but for a counter
	// row) and answers ErrSlowPath when a buffer is short but the stock is
	// not.
	TakeFast TakeMode = iota
	// TakeRetry takes again after RefillInline refilled the buffers, and
	// answers ErrSlowPath when others took the refill first.
	TakeRetry
	// TakeLocked takes each key's lock (advisory lock, lock row), refills
	// its buffer and takes, in the attempt's transaction.
	TakeLocked
)

// ModeOf is the take mode of an attempt at slowness level (0 fast, up to
// SlowLevelMax) in the engine's own transaction (own) or a caller's: the
// first slow attempt of the engine's own retakes after a refill in a
// transaction of its own; inside a caller's it refills under the lock in
// place.
func ModeOf(level int, own bool) TakeMode {
	switch {
	case level == 1 && own:
		return TakeRetry
	case level > 0:
		return TakeLocked
	}
	return TakeFast
}

// Reserver is the attempts of a reservation (the hot path: each is the
// driver's per-attempt SQL, in its lock order).
type Reserver[TTx comparable] interface {
	// ReserveAttempt is one attempt of r in tx taking units by mode: the
	// hold (Replayed when it was already in place, with ErrRollback), an
	// *InsufficientStockError naming every short line,
	// ErrIdempotencyConflict, or ErrSlowPath.
	ReserveAttempt(ctx context.Context, tx TTx, own bool, r *Reservation, mode TakeMode) (*holdfast.Hold, error)
	// SoldOut answers r from one lock-free read when its keys recently sold
	// out: the short lines, or none to go the normal way (the checkout has
	// a hold, an outcome, or an attempt in flight).
	SoldOut(ctx context.Context, r *Reservation) ([]holdfast.Shortfall, error)
	// RefillInline refills the lines' buffers in a short transaction of its
	// own, before the first slow attempt.
	RefillInline(ctx context.Context, shop int64, lines []holdfast.Line) error
	// Combines reports whether k is a batch key as the driver last saw its
	// strategy (its default for keys it has not seen).
	Combines(k holdfast.Key) bool
	// CombinedAttempt runs one combined transaction of the driver's own
	// for reqs — distinct checkouts, each one line on a batch key — in its
	// lock order: the keys' counter rows locked in key and slot order (PostgreSQL:
	// on the short lock wait Config.CombineLockWait), each key's requests
	// granted in the order given while its units last (a checkout that
	// already has a hold or outcome is not granted), the granted holds
	// created with their lines and their units taken, then COMMIT. It
	// answers each request's new hold by its index in reqs (nil: not
	// granted; the engine sends it to the plain path). A failed COMMIT is
	// a *CommitError; the driver never retries. stripe, below the
	// engine's CombineRunnersMax, is the batch's own among the batches of
	// this client running at once (consecutive batches alternate them): a
	// driver whose batch keys keep one counter row per stripe takes a key
	// its CombineOverlap lets two batches share from row stripe only, so
	// those batches never wait for each other and the key's rows drain
	// evenly (PostgreSQL: a deep key; a shallow one's batch holds every
	// row of it). elsewhere[i] (nil when the driver
	// keeps one row per key) reports a request not granted for want of
	// units on the batch's row while its key's other rows had them, as
	// the batch read them (counted down over the requests it did not
	// grant, in order): a batch on another stripe may grant it.
	CombinedAttempt(ctx context.Context, reqs []*Reservation, stripe int) (holds []*holdfast.Hold, elsewhere []bool, err error)
	// CombineLockBusy reports a combined attempt that gave up on its short
	// lock wait: the engine does not run it again, its requests take the
	// plain path.
	CombineLockBusy(err error) bool
	// CombineOverlap is how many combined transactions of key k may run
	// at once, at most the engine's CombineRunnersMax: 1 when its batches
	// would lock the same counter rows for their whole transactions (a
	// second batch would only wait for them); its counter rows when it
	// keeps one per stripe and a batch takes from its stripe's only
	// (CombinedAttempt); more than 1 too when a batch locks its key's row
	// only for its take and COMMIT (MySQL's optimistic batch of a deep
	// key). It may change with each batch: correctness never depends on
	// it.
	CombineOverlap(k holdfast.Key) int
	// MarkNotStocked marks the lines of an *InsufficientStockError that no
	// key stocks; other errors pass. It reads in tx when not own.
	MarkNotStocked(ctx context.Context, tx TTx, own bool, shop int64, err error) error
}
