// Package driver is the contract a database implements under holdfast's
// engine (package engine): whole database attempts — one transaction's
// worth of statements in the database's own lock order and idioms — plus
// the database's error classifier and capabilities. The engine decides
// what to do with an attempt's answer (retry it, slow down, combine, wait,
// replay, call the outcome unknown); a driver never retries and never
// decides a status. See docs/DESIGN.md, "One engine, two drivers".
//
// Drivers are generic over their transaction type TTx (pgx.Tx, *sql.Tx) so
// that the engine's …Tx twins take the caller's own transaction typed to
// its database, as River's riverdriver.Driver[TTx] does.
package driver

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Driver is one database under the engine (engine.Client[TTx]): its
// classifier, the one way it runs an attempt, and the domains' attempts.
// The domains that are still each driver's own (docs/DESIGN.md, "Moved so
// far") join this interface as they move into the engine.
type Driver[TTx comparable] interface {
	Classifier
	// Attempt runs fn once in a transaction — the driver's own when own,
	// else a savepoint in the caller's tx — and commits it (or releases
	// the savepoint). A failure of COMMIT itself is a *CommitError. fn's
	// error rolls the transaction (savepoint) back and is returned as is;
	// a driver whose database rolls the caller's whole transaction back
	// answers an error CallerTxLost reports.
	Attempt(ctx context.Context, tx TTx, own bool, route string, fn func(tx TTx) error) error

	Reserver[TTx]
	Allocator[TTx]
	Lister[TTx]
	Stocker[TTx]
	Eventer[TTx]
	Settings[TTx]
	Editor[TTx]
	Checker
	Lifecycle[TTx]
	Waits[TTx]
	Waitlist[TTx]
	Enqueuer[TTx]
	Merger[TTx]
	Maintainer[TTx]
	Buyers[TTx]
	Availabilities
	Auditor[TTx]
	Bundler[TTx]
	Dropper[TTx] // drop.go: fair drops
	Preorders[TTx]
}

// Lifecycle is the attempts of a hold's lifecycle. Each runs in the
// transaction it is given, in the driver's lock order (docs/DESIGN.md,
// "Lock order"), and answers the hold, a holdfast error the engine passes
// on, or a sentinel (ErrRetry: decided and undone meanwhile, look again).
type Lifecycle[TTx comparable] interface {
	// ClaimAttempt moves a held (or lapsed, unswept) hold to claimed and
	// deducts its lines; a claimed hold answers itself with Replayed set,
	// a released one holdfast.ErrHoldReleased, a swept one is claimed late
	// from sellable stock or answers a *holdfast.ExpiredError; none is
	// holdfast.ErrNotFound. own: tx is the driver's own transaction.
	ClaimAttempt(ctx context.Context, tx TTx, own bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error)
	// ReleaseAttempt moves a held hold to released and gives its units
	// back (refilling buffers it can without waiting, queueing the rest
	// for the replenisher); an ended hold answers itself with Replayed
	// set, a claimed one holdfast.ErrHoldClaimed; none is ErrNotFound.
	ReleaseAttempt(ctx context.Context, tx TTx, own bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error)
	// ExtendAttempt moves a held hold's expiry to the database's now + ttl
	// within its deadline: ErrLifetimeExceeded beyond it, ErrHoldClaimed,
	// ErrHoldReleased or ErrHoldExpired for an ended hold, ErrNotFound.
	ExtendAttempt(ctx context.Context, tx TTx, shop int64, checkout uuid.UUID, ttl time.Duration) (*holdfast.Hold, error)
	// ReadHold reads a checkout's hold (a lapsed one as StatusExpired,
	// Claimable); none is ErrNotFound.
	ReadHold(ctx context.Context, tx TTx, route string, shop int64, checkout uuid.UUID) (*holdfast.Hold, error)
}

// Waits is what the lifecycle asks of a checkout's wait: a checkout
// without a hold may be waiting. (The waitlist server's primitives are
// Waitlist, its enqueue Enqueuer.)
type Waits[TTx comparable] interface {
	// CancelWait cancels the checkout's wait in tx if it still waits
	// (event waitlist.cancelled; the keys its lines hold back are the
	// replenisher's), reporting whether it did.
	CancelWait(ctx context.Context, tx TTx, route string, shop int64, checkout uuid.UUID) (cancelled bool, err error)
	// WaiterAnswer reads the checkout's wait: a *holdfast.WaitlistedError
	// while it waits, ErrWaitExpired (a *WaitLapsedError when nothing
	// ended it yet), ErrWaitCancelled or ErrWaitUnservable once it ended
	// without a hold, ErrGranted once granted, ErrNotFound without a wait.
	WaiterAnswer(ctx context.Context, tx TTx, route string, shop int64, checkout uuid.UUID) error
	// ExpireWait ends a lapsed wait as expired (event waitlist.expired); a
	// wait ended meanwhile is left as it ended.
	ExpireWait(ctx context.Context, tx TTx, shop int64, checkout uuid.UUID) error
}

// ErrGranted is WaiterAnswer's answer for a wait that was granted: the
// checkout's hold answers.
var ErrGranted = errors.New("holdfast: wait granted")

// WaitLapsedError is WaiterAnswer's ErrWaitExpired for a wait past its end
// that nothing ended yet: the engine answers ErrWaitExpired and ends it as
// expired (ExpireWait) once its transaction is over.
type WaitLapsedError struct {
	Shop     int64
	Checkout uuid.UUID
}

func (e *WaitLapsedError) Error() string        { return holdfast.ErrWaitExpired.Error() }
func (e *WaitLapsedError) Is(target error) bool { return target == holdfast.ErrWaitExpired }

// Sentinels an attempt answers the engine with. They never reach a caller.
var (
	// ErrSlowPath asks the engine to roll the attempt back and run it
	// again one level slower (at most SlowLevelMax times).
	ErrSlowPath = errors.New("holdfast: take the slow path")
	// ErrRetry asks the engine to roll back and run the attempt again,
	// counting it as a retry: a race with a concurrent purge, strategy
	// change, key creation or retry.
	ErrRetry = errors.New("holdfast: transient race, retrying")
	// ErrRollback asks the engine to roll the transaction back and report
	// success: the attempt found its answer already in place (a replayed
	// reservation) and what it did must not be kept.
	ErrRollback = errors.New("holdfast: roll back, done")
)

// SlowLevelMax bounds how often an operation asks for a slower path
// (ErrSlowPath): fast, then slow, then slowest.
const SlowLevelMax = 2

// CommitError marks a failure of COMMIT itself: the outcome is unknown
// until the classifier says otherwise (Classifier.CommitUnacknowledged).
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return "commit: " + e.Err.Error() }

func (e *CommitError) Unwrap() error { return e.Err }

// Classifier is a driver's one mapping of its database's errors. Every
// method is safe for concurrent use and must accept nil.
type Classifier interface {
	// Code is the server's error code in err's chain (a SQLSTATE, a MySQL
	// error number), "" when err is not the server's answer. It labels
	// retries for the Observer.
	Code(err error) string
	// Retryable reports that the server rolled the attempt (or its last
	// statement) back for a reason a new attempt can clear: a deadlock, a
	// serialization failure, a lock wait timeout, a server going down.
	Retryable(err error) bool
	// ConnectionLost reports that the connection failed under the
	// attempt; the outcome of a COMMIT in flight is unknown.
	ConnectionLost(err error) bool
	// CommitUnacknowledged reports a *CommitError in err's chain whose
	// COMMIT the server did not answer: it may have committed.
	CommitUnacknowledged(err error) bool
	// Unavailable reports what, left after the retries, means "the
	// database cannot serve this now; try later" (holdfast.ErrUnavailable),
	// beyond lost connections and retryable failures: a statement timeout,
	// a read-only server.
	Unavailable(err error) bool
	// CallerTxLost reports a failure after which the database has rolled
	// the caller's whole transaction back (a deadlock inside a savepoint on
	// InnoDB): a …Tx attempt is then never run again in place, and the
	// answer is holdfast.ErrTxRolledBack. PostgreSQL never does this.
	CallerTxLost(err error) bool
}

// Lister is the reads of the listings: each is one read in the attempt's
// transaction, newest first, at most one row more than the query's limit
// (the engine trims the page and makes its cursor).
type Lister[TTx comparable] interface {
	// ListHolds reads q's shop's holds and outcomes after cur (nil: from
	// the newest), filtered as q says, lapsed holds as StatusExpired.
	ListHolds(ctx context.Context, tx TTx, q holdfast.HoldQuery, cur *holdfast.HoldCursor) ([]holdfast.Hold, error)
	// ListLedger reads q's key's ledger entries after cur.
	ListLedger(ctx context.Context, tx TTx, q holdfast.LedgerQuery, cur *holdfast.LedgerCursor) ([]holdfast.LedgerEntry, error)
	// ListKeys reads q's shop's keys by activity, at most q.Limit.
	ListKeys(ctx context.Context, tx TTx, q holdfast.KeyQuery) ([]holdfast.Key, error)
}

// Stocker is the attempts on a key's stock, each under the key's lock in
// the driver's lock order, answering the key's level as it leaves it.
type Stocker[TTx comparable] interface {
	// Strategies is the strategies the driver offers (a capability).
	Strategies() []holdfast.Strategy
	// ChangeStockAttempt applies a validated change (recording an
	// identified one first, and answering its first outcome on a replay):
	// ErrOverCommitted when a move would leave holds above available.
	ChangeStockAttempt(ctx context.Context, tx TTx, own bool, ch holdfast.StockChange) (*holdfast.Level, error)
	// SetStrategyAttempt moves a key's buffer to strategy s (pool cap
	// poolCap, 0 the default), creating the key when new.
	SetStrategyAttempt(ctx context.Context, tx TTx, k holdfast.Key, s holdfast.Strategy, poolCap int) (*holdfast.Level, error)
	// StrategyChanged tells the driver to forget what it cached of k's
	// strategy.
	StrategyChanged(k holdfast.Key)
	// SetSafetyAttempt sets a key's safety stock, creating the key when
	// new, keeping safety units out of its buffer and ending waits it
	// leaves unservable.
	SetSafetyAttempt(ctx context.Context, tx TTx, k holdfast.Key, safety int) (*holdfast.Level, error)
	// ReadLevel reads a key's level.
	ReadLevel(ctx context.Context, tx TTx, route string, k holdfast.Key) (*holdfast.Level, error)
}

// Eventer is the event feed's database side.
type Eventer[TTx comparable] interface {
	// SequencePasses runs a bounded number of sequencing passes — each one
	// batch, under the one sequencer lock across every process — and
	// answers how many events it sequenced. reading: on behalf of a read
	// (the request path's connections), else the maintenance's.
	SequencePasses(ctx context.Context, reading bool) (int, error)
	// ReadEvents reads up to limit of shop's sequenced events after the
	// cursor after, and the shop's last cursor (read first: an event at or
	// before it that the read does not see was purged).
	ReadEvents(ctx context.Context, tx TTx, shop, after int64, limit int) (events []holdfast.Event, last int64, err error)
}

// Settings is the attempts on a shop's settings: per-buyer limits and the
// default location order.
type Settings[TTx comparable] interface {
	// PutBuyerLimit sets an item's per-buyer limit (last writer wins).
	PutBuyerLimit(ctx context.Context, tx TTx, l holdfast.BuyerLimit) error
	// GetBuyerLimit reads it: holdfast.ErrNotFound when the item has none.
	GetBuyerLimit(ctx context.Context, tx TTx, shop, item int64) (*holdfast.BuyerLimit, error)
	// DeleteBuyerLimit removes it (none is no error).
	DeleteBuyerLimit(ctx context.Context, tx TTx, shop, item int64) error
	// PutLocationOrder sets a shop's default location order; empty clears it.
	PutLocationOrder(ctx context.Context, tx TTx, shop int64, locations []int64) error
	// GetLocationOrder reads it: empty, not nil, when none is set.
	GetLocationOrder(ctx context.Context, tx TTx, shop int64) ([]int64, error)
}

// Editor is the attempts of edits and partial claims of a held checkout.
type Editor[TTx comparable] interface {
	// EditAttempt replaces a held checkout's lines with lines (validated,
	// sorted; raw their JSON) taking only the differences by mode, and
	// answers the hold and the grown lines (what a slow path refills).
	EditAttempt(ctx context.Context, tx TTx, own bool, p holdfast.EditParams, lines []holdfast.Line, raw []byte, mode TakeMode) (*holdfast.Hold, []holdfast.Line, error)
	// ClaimLinesAttempt claims want (validated from in) of a held checkout
	// and releases the rest.
	ClaimLinesAttempt(ctx context.Context, tx TTx, own bool, shop int64, checkout uuid.UUID, in, want []holdfast.Line) (*holdfast.Hold, error)
}

// Checker reads the whole database for the invariant.
type Checker interface {
	// ReadInvariant reads every key, hold and ledger from one snapshot (a
	// read-only transaction of its own) and reports what breaks the
	// invariant; one read, never retried by the driver.
	ReadInvariant(ctx context.Context) (*holdfast.InvariantReport, error)
}

// ClaimCombiner is what a driver that combines claims offers (optional:
// the engine asks by type assertion; a driver without it serves every
// claim on its own). Issue #29 item 6.
type ClaimCombiner interface {
	// CombinedClaimAttempt runs one transaction of the driver's own that
	// claims, in one statement per step, the checkouts of claims whose
	// holds are held and not locked by another transaction, and deducts
	// their lines (each key's level row written once). It answers, per
	// claim, the claimed hold or nil (none of the batch's doing: the
	// engine serves it on the plain path). An error means nothing
	// committed, unless it is a commit error the driver's classifier
	// reports unacknowledged.
	CombinedClaimAttempt(ctx context.Context, claims []ClaimRequest) ([]*holdfast.Hold, error)
}

// ClaimRequest is one claim of a combined claim batch.
type ClaimRequest struct {
	Shop     int64
	Checkout uuid.UUID
}
