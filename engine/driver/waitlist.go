package driver

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// KeyWait is what one key of a cart that asks to wait has, read under the
// key's lock.
type KeyWait struct {
	Available int  // the key's available stock
	Held      int  // its units in holds
	Waited    bool // it has waiters
}

// Enqueuer is the waitlist's enqueue: a short reservation that asked to
// wait (engine/waitenqueue.go decides whether its cart can), in one
// transaction of the driver's own.
type Enqueuer[TTx comparable] interface {
	// ReserveExisting answers a reservation whose checkout already has a
	// hold or outcome (its replay with ErrRollback, ErrIdempotencyConflict
	// for other lines, how it ended) or a wait (the wait's answer);
	// holdfast.ErrNotFound when the checkout has neither.
	ReserveExisting(ctx context.Context, tx TTx, r *Reservation) (*holdfast.Hold, error)
	// WaitKeys takes the locks of r's lines' keys in key order and reads,
	// per line, what its key has.
	WaitKeys(ctx context.Context, tx TTx, r *Reservation) ([]KeyWait, error)
	// Enqueue puts r's checkout on the waitlist for up to wait with its
	// short lines (short; shortfalls as the reservation answered them)
	// queued on their keys, empties those keys' buffers (their units go to
	// the waiters first) and records event waitlist.waiting. ErrRetry when
	// the checkout was enqueued meanwhile.
	Enqueue(ctx context.Context, tx TTx, r *Reservation, short []holdfast.Line, shortfalls []holdfast.Shortfall, wait time.Duration) error
}

// Waiter is one waiting checkout at the front of a key's queue, as the
// waitlist server reads it.
type Waiter struct {
	Shop     int64
	Checkout uuid.UUID
	Seq      int64           // its place in the queues (enqueue order)
	Lines    []holdfast.Line // its cart, sorted
	TTL      time.Duration   // the TTL its hold gets when granted
	// BuyerHash is the keyed hash of the buyer id it was enqueued with
	// (nil: none): the granted hold records it, so the buyer's retry
	// replays the hold and the hold counts towards the buyer's limits.
	BuyerHash []byte
}

// Waitlist is the waitlist server's primitives: one pass of the server
// (engine/waitlist.go: the window over keys with waiters, the locks in key
// order, head of line, the grant rounds and their bounds) calls them in
// one maintenance transaction (Maintainer.MaintenanceAttempt), in this
// order, after taking the serve lock; each is the driver's SQL in its lock
// order, and none decides which waiter goes next.
type Waitlist[TTx comparable] interface {
	// AnyWaiting reads, outside any transaction, whether anybody waits:
	// the one statement a pass costs when nobody does.
	AnyWaiting(ctx context.Context) (bool, error)
	// WaitServeLock takes the one lock that makes a pass run alone across
	// every process, to the end of tx.
	WaitServeLock(ctx context.Context, tx TTx) error
	// ExpireWaits ends at most holdfast.WaitlistScanMax waits past their
	// end as expired (event waitlist.expired) and answers how many.
	ExpireWaits(ctx context.Context, tx TTx) (int, error)
	// WaitWindow reads the next limit keys with waiters after from (the
	// zero Key: from the first), in key order.
	WaitWindow(ctx context.Context, tx TTx, from holdfast.Key, limit int) ([]holdfast.Key, error)
	// WaitHeads reads the front waiter of each of keys' queues, oldest
	// first (a waiter at the front of several queues once).
	WaitHeads(ctx context.Context, tx TTx, keys []holdfast.Key) ([]Waiter, error)
	// LockWaitKey takes k's lock (the driver's key lock) to the end of tx;
	// false when k has nothing to lock (no key row: a cart asking for it
	// can never be served).
	LockWaitKey(ctx context.Context, tx TTx, k holdfast.Key) (bool, error)
	// EndUnservableWaits ends the waits on keys (the pass's window, locked
	// as locked says) that ask more of a key than its available stock
	// (event waitlist.unservable) and answers how many.
	EndUnservableWaits(ctx context.Context, tx TTx, keys []holdfast.Key, locked map[holdfast.Key]bool) (int, error)
	// GrantWait grants w's whole cart as a hold with its TTL (event
	// waitlist.held) when every line's key has the units, else nothing:
	// done reports a grant (h is the hold where the driver reads it back,
	// else nil).
	GrantWait(ctx context.Context, tx TTx, w Waiter) (h *holdfast.Hold, done bool, err error)
	// RefillWaitKeys gives the locked keys whose queue emptied their
	// buffers back; keys that still have waiters get nothing.
	RefillWaitKeys(ctx context.Context, tx TTx, keys []holdfast.Key, locked map[holdfast.Key]bool) error
}
