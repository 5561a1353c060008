package holdfast

import (
	"errors"
	"fmt"
	"time"
)

// Waitlist bounds.
const (
	// WaitMaxDefault is the default of Config.WaitMax: the longest a
	// reservation may ask to wait for units to come back.
	WaitMaxDefault = 15 * time.Minute
	// WaitMaxLimit bounds Config.WaitMax.
	WaitMaxLimit = 24 * time.Hour
	// WaitlistScanMax bounds the waits that ran out one pass of the
	// waitlist server ends, and the waiters of a key it looks at.
	WaitlistScanMax = 500
	// WaitlistKeysMax bounds the keys with waiters one pass of the waitlist
	// server serves. Each key's queue is served on its own (head of line
	// per key), so a key — or a shop — whose waiters cannot be served
	// holds up no other; passes take the keys round robin, and a full pass
	// asks the worker for another at once.
	WaitlistKeysMax = 100
	// WaitlistGrantsMax bounds the waits one pass of the waitlist server
	// grants or ends; the worker runs another pass at once after a full
	// one.
	WaitlistGrantsMax = 500
)

// Errors of the waitlist.
var (
	// ErrWaitlisted: the reservation (ReserveParams.Wait set) was short
	// while the short keys have outstanding holds, so the checkout waits in
	// the keys' queue; nothing is held yet. The error is a
	// *WaitlistedError. Units that come back go to the waiting carts
	// first-come-first-served; read the checkout with Hold: it answers the
	// hold once granted (with the normal TTL), ErrWaitlisted while it
	// waits, ErrWaitExpired once the wait ran out. A retry of the same
	// Reserve answers the same.
	ErrWaitlisted = errors.New("holdfast: waiting for stock")
	// ErrWaitExpired: the checkout waited (ErrWaitlisted) and its wait ran
	// out before its whole cart could be held; nothing is held. Reserve
	// under a new checkout id. The outcome is final: the first answer
	// that says so (or the waitlist server) ends the wait as expired
	// (EventWaitlistExpired), and a later Release answers ErrWaitExpired
	// too, changing nothing.
	ErrWaitExpired = errors.New("holdfast: wait expired")
	// ErrWaitCancelled: the checkout waited (ErrWaitlisted) and was
	// released: Release of a waiting checkout ends its wait and answers
	// ErrWaitCancelled, and so does every later Release, Hold or Reserve
	// of it. Nothing is held and nothing will be.
	ErrWaitCancelled = errors.New("holdfast: wait cancelled")
	// ErrWaitUnservable: the checkout waited (ErrWaitlisted) and its cart
	// came to ask more of a key than could ever come back to it (more
	// than available less the safety stock: a held unit was claimed, the
	// stock was lowered or the safety stock raised). The wait ended at
	// once, so the key's units are for sale again; nothing is held. Reserve
	// what is sellable under a new checkout id.
	ErrWaitUnservable = errors.New("holdfast: wait can no longer be served")
	// ErrCheckoutWaiting: Claim, ClaimLines, Extend or Edit of a checkout
	// that is waiting for stock (ErrWaitlisted): it holds nothing yet, so
	// there is nothing to claim, extend or edit. Read it (Hold) until it
	// is held, or Release it to cancel its wait. Of a wait that ended
	// without a hold they answer how it ended (ErrWaitExpired,
	// ErrWaitCancelled, ErrWaitUnservable), as Hold does.
	ErrCheckoutWaiting = errors.New("holdfast: checkout is waiting for stock")
)

// WaitlistedError is a checkout waiting for its cart. It matches
// ErrWaitlisted.
type WaitlistedError struct {
	// Position is 1 for the first waiting cart of the shop that shares a
	// key with this one, 2 for the one behind it, and so on; 0 for a drop's
	// entrant before the draw (it has no place until the lottery gives it
	// one).
	Position int
	// WaitUntil is when the wait runs out.
	WaitUntil time.Time
	// Lines are the lines that were short when the checkout started to
	// wait (the Shortfall of its first answer).
	Lines []Shortfall
}

func (e *WaitlistedError) Error() string {
	return fmt.Sprintf("holdfast: waiting for stock: position %d, until %s", e.Position, e.WaitUntil.UTC().Format(time.RFC3339))
}

func (e *WaitlistedError) Is(target error) bool { return target == ErrWaitlisted }

// ValidateWait checks ReserveParams.Wait against cfg's bound (WaitMax, or
// WaitMaxDefault when zero): every engine's one check of it.
func ValidateWait(cfg Config, wait time.Duration) error {
	if wait < 0 || wait > WaitMaxOf(cfg) {
		return NewArgumentError("wait", "must be between 0 and %v", WaitMaxOf(cfg))
	}
	return nil
}

// WaitMaxOf is cfg.WaitMax, or WaitMaxDefault when it is zero.
func WaitMaxOf(cfg Config) time.Duration {
	if cfg.WaitMax == 0 {
		return WaitMaxDefault
	}
	return cfg.WaitMax
}

func validWaitMax(d time.Duration) error {
	if d < 0 || d > WaitMaxLimit {
		return NewArgumentError("Config.WaitMax", "must be between 0 and %v, got %v", WaitMaxLimit, d)
	}
	return nil
}

// Events of the waitlist (in the shop's event feed, Engine.Events).
const (
	// EventWaitlistHeld: a waiting checkout's cart was held, with the
	// hold's lines and expiry.
	EventWaitlistHeld EventType = "waitlist.held"
	// EventWaitlistExpired: a checkout's wait ran out before its cart
	// could be held (or the checkout got a hold of its own meanwhile);
	// nothing is held for it.
	EventWaitlistExpired EventType = "waitlist.expired"
	// EventWaitlistWaiting: a checkout started to wait, with its cart's
	// lines: from now on no new buyer gets the keys it is short on.
	EventWaitlistWaiting EventType = "waitlist.waiting"
	// EventWaitlistCancelled: a waiting checkout was released
	// (ErrWaitCancelled); nothing is held for it.
	EventWaitlistCancelled EventType = "waitlist.cancelled"
	// EventWaitlistUnservable: a waiting checkout's cart came to ask more
	// of a key than its available stock (ErrWaitUnservable); the wait
	// ended and nothing is held for it.
	EventWaitlistUnservable EventType = "waitlist.unservable"
)
