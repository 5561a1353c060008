package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Client is holdfast's engine over one database's driver: the operations
// of holdfast.Engine and their …Tx twins, written once. TTx is the
// driver's transaction type (pgx.Tx, *sql.Tx), so a twin takes the
// caller's own transaction typed to its database, as River's Client[TTx]
// does. Packages postgres and mysql return it inside their Client, which
// adds what only that database has; users do not build one themselves.
//
// A Client is safe for concurrent use.
type Client[TTx comparable] struct {
	core *Core
	cfg  holdfast.Config
	d    driver.Driver[TTx]

	soldOutAt  sync.Map       // Key -> time.Time: when a reservation last found it sold out (hint.go)
	inflight   atomic.Int64   // combinable reservations in flight: the contention that decides combining
	sequencer  sequencer      // coalesces event sequencing (events.go)
	buyer      buyerKey       // the buyer-id secret, once read (buyer.go)
	combiner   combiner       // contended reservations on batch keys (combine.go)
	claims     claimCombiner  // concurrent claims (claimcombine.go)
	claimsIn   atomic.Int64   // claims in flight in the engine's own transaction: the contention that decides combining
	waitCursor waitCursor     // where the waitlist server's next pass starts (waitlist.go)
	avail      availCoalescer // concurrent availability reads of a shop (availcoalesce.go)
	maint      maintenance    // the maintenance workers and their scheduling (maintenance.go)

	bundleCache bundleCache // shops' bundle definitions (bundle.go)
	dropHint    sync.Map    // Key -> time.Time: when a short answer last found the key without an open drop (drop.go)
}

// NewClient returns the engine over d with cfg (defaults filled in and
// validated by the caller) and core, the core d's own code shares.
func NewClient[TTx comparable](core *Core, d driver.Driver[TTx]) *Client[TTx] {
	c := &Client[TTx]{core: core, cfg: core.cfg, d: d}
	c.maint.prober, _ = d.(driver.ExpiryProber)
	c.maint.changed.d, _ = d.(driver.ChangedKeys)
	if c.maint.changed.d == nil {
		c.maint.topUp.d, _ = d.(driver.PoolTopUpper)
	}
	return c
}

// Config is the client's configuration with defaults filled in.
func (c *Client[TTx]) Config() holdfast.Config { return c.cfg }

// run runs attempts of fn in tx (own: the driver's own transaction) under
// the engine's one retry policy (Core.Run).
func (c *Client[TTx]) run(ctx context.Context, tx TTx, own bool, route string, idempotent bool, fn func(tx TTx) error) error {
	return c.core.Run(ctx, route, own, idempotent, nil, func(int) error {
		return c.d.Attempt(ctx, tx, own, route, fn)
	})
}

// callerTx checks a …Tx twin's transaction.
func callerTx[TTx comparable](tx TTx) error {
	var zero TTx
	if tx == zero {
		return holdfast.NewArgumentError("tx", "must not be nil")
	}
	return nil
}

// observe reports an operation's outcome to the Observer.
func (c *Client[TTx]) observe(route string, start time.Time, err error, h *holdfast.Hold) {
	c.cfg.Observer.Op(route, Outcome(err, h), time.Since(start))
}

// Claim converts a checkout's hold into a permanent deduction: in one
// transaction its lines leave reserved_quantities, available drops by each
// line, and the audit trail records each line with the checkout as
// reference.
//
// A repeated Claim returns the claimed hold with Replayed set: success, not
// an error that would trigger a refund. A released checkout is
// ErrHoldReleased. A hold that expired but was not yet swept is still
// claimable (its units never went back). Once swept, Claim tries to take the
// same lines afresh from sellable stock in the same transaction; when it
// cannot, the error is an *ExpiredError with the shortfall: refund. A
// checkout that is waiting is ErrCheckoutWaiting.
func (c *Client[TTx]) Claim(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	var zero TTx
	waitsEnded := false
	h, err := OrWait(c, ctx, shopID, checkoutID, func() (*holdfast.Hold, error) {
		return c.claim(ctx, zero, true, shopID, checkoutID, &waitsEnded)
	})
	if err == nil && !h.Replayed && !waitsEnded { // a combined claim's batch ended them (claimcombine.go)
		// Claimed units never come back: a wait that asked for them ends
		// now.
		c.endUnservableOn(ctx, holdfast.RouteClaim, KeysOf(shopID, h.Lines))
	}
	return h, err
}

// ClaimTx is Claim inside the caller's transaction (in a savepoint), so the
// application's order row and the claim commit together.
func (c *Client[TTx]) ClaimTx(ctx context.Context, tx TTx, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	if err := callerTx(tx); err != nil {
		return nil, err
	}
	return c.claim(ctx, tx, false, shopID, checkoutID, nil)
}

// claim is Claim's and ClaimTx's attempt loop; *waitsEnded (when not nil)
// is set when a combined batch served the claim and ended the waits its
// keys can no longer serve.
func (c *Client[TTx]) claim(ctx context.Context, tx TTx, own bool, shop int64, checkout uuid.UUID, waitsEnded *bool) (*holdfast.Hold, error) {
	start := time.Now()
	if err := holdfast.ValidateCheckout(shop, checkout); err != nil {
		c.observe(holdfast.RouteClaim, start, err, nil)
		return nil, err
	}
	var h *holdfast.Hold
	var err error
	combined, doubt, ended := false, false, false
	if cc, ok := c.d.(driver.ClaimCombiner); ok && own {
		n := c.claimsIn.Add(1)
		defer c.claimsIn.Add(-1)
		h, err, combined, doubt, ended = c.claimCombined(ctx, cc, shop, checkout, n)
		if waitsEnded != nil {
			*waitsEnded = ended
		}
	}
	if !combined {
		err = c.run(ctx, tx, own, holdfast.RouteClaim, true, func(tx TTx) error {
			var err error
			h, err = c.d.ClaimAttempt(ctx, tx, own, shop, checkout)
			if err != nil {
				return err
			}
			return c.owe(ctx, tx, own, h) // pre-ordered lines are owed (preorder.go)
		})
		if doubt && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, holdfast.ErrUnavailable)) {
			// The plain path could not finish the retry of a combined
			// commit that went unacknowledged: the claim may have
			// committed.
			err = fmt.Errorf("%w: %s: combined commit not acknowledged, retry failed: %v", holdfast.ErrOutcomeUnknown, holdfast.RouteClaim, err)
		}
	}
	c.observe(holdfast.RouteClaim, start, err, h)
	if err != nil {
		return nil, err
	}
	if !h.Replayed && h.EndedAt != nil {
		c.cfg.Observer.Claimed(h.EndedAt.Sub(h.CreatedAt))
	}
	return c.viewHold(ctx, tx, own, h), nil
}

// Release gives a checkout's held units back: its lines leave
// reserved_quantities and, where the key's lock is free, go straight back
// into the key's buffer (otherwise the replenisher or the next short
// reservation refills it). Releasing twice returns the released hold with
// Replayed set; releasing a hold that expired returns it with status
// expired — also one past its expiry not swept yet, which the release ends
// as expired (its units go back). Releasing a claimed checkout is
// ErrHoldClaimed; releasing a waiting checkout cancels its wait
// (ErrWaitCancelled).
func (c *Client[TTx]) Release(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	var zero TTx
	h, err := c.release(ctx, zero, true, shopID, checkoutID)
	if (err == nil && !h.Replayed) || errors.Is(err, holdfast.ErrWaitCancelled) {
		c.kickWaitlist() // units came back, or a wait ended: waiters first
	}
	return h, err
}

// ReleaseTx is Release inside the caller's transaction (in a savepoint).
func (c *Client[TTx]) ReleaseTx(ctx context.Context, tx TTx, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	if err := callerTx(tx); err != nil {
		return nil, err
	}
	return c.release(ctx, tx, false, shopID, checkoutID)
}

func (c *Client[TTx]) release(ctx context.Context, tx TTx, own bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	start := time.Now()
	if err := holdfast.ValidateCheckout(shop, checkout); err != nil {
		c.observe(holdfast.RouteRelease, start, err, nil)
		return nil, err
	}
	var h *holdfast.Hold
	var answer error
	err := c.run(ctx, tx, own, holdfast.RouteRelease, true, func(tx TTx) error {
		var err error
		h, answer = nil, nil
		h, err = c.d.ReleaseAttempt(ctx, tx, own, shop, checkout)
		if errors.Is(err, holdfast.ErrNotFound) {
			// No hold: releasing a waiting checkout cancels its wait.
			answer, err = c.cancelWait(ctx, tx, holdfast.RouteRelease, shop, checkout)
		}
		return err
	})
	err = cmp.Or(err, answer)
	c.observe(holdfast.RouteRelease, start, err, h)
	if err != nil {
		return nil, err
	}
	return c.viewHold(ctx, tx, own, h), nil
}

// Extend moves a held checkout's expiry to now + ttl, never past its
// deadline (creation + Config.HoldLifetimeMax): beyond it the error is
// ErrLifetimeExceeded. A hold that expired but was not swept can be
// extended (its units never went back). An ended hold is ErrHoldClaimed,
// ErrHoldReleased or ErrHoldExpired.
func (c *Client[TTx]) Extend(ctx context.Context, shopID int64, checkoutID uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	var zero TTx
	return OrWait(c, ctx, shopID, checkoutID, func() (*holdfast.Hold, error) {
		return c.extend(ctx, zero, true, shopID, checkoutID, ttl)
	})
}

// ExtendTx is Extend inside the caller's transaction (in a savepoint).
func (c *Client[TTx]) ExtendTx(ctx context.Context, tx TTx, shopID int64, checkoutID uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	if err := callerTx(tx); err != nil {
		return nil, err
	}
	return c.extend(ctx, tx, false, shopID, checkoutID, ttl)
}

func (c *Client[TTx]) extend(ctx context.Context, tx TTx, own bool, shop int64, checkout uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	start := time.Now()
	err := holdfast.ValidateCheckout(shop, checkout)
	if err == nil && (ttl < holdfast.HoldTTLMin || ttl > c.cfg.HoldLifetimeMax) {
		err = holdfast.NewArgumentError("ttl", "must be between %v and %v", holdfast.HoldTTLMin, c.cfg.HoldLifetimeMax)
	}
	if err != nil {
		c.observe(holdfast.RouteExtend, start, err, nil)
		return nil, err
	}
	var h *holdfast.Hold
	err = c.run(ctx, tx, own, holdfast.RouteExtend, true, func(tx TTx) error {
		var err error
		h, err = c.d.ExtendAttempt(ctx, tx, shop, checkout, ttl)
		return err
	})
	c.observe(holdfast.RouteExtend, start, err, h)
	if err != nil {
		return nil, err
	}
	return c.viewHold(ctx, tx, own, h), nil
}

// Hold returns a checkout's hold or outcome. A hold past its expiry that
// the sweeper has not taken yet reports StatusExpired with Claimable set:
// a claim still succeeds (its units never went back), an Extend still
// revives it, a Release ends it as expired. A checkout without a hold
// answers from its wait.
func (c *Client[TTx]) Hold(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	if err := holdfast.ValidateCheckout(shopID, checkoutID); err != nil {
		return nil, err
	}
	var zero TTx
	var h *holdfast.Hold
	err := c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		h, err = c.d.ReadHold(ctx, tx, holdfast.RouteRead, shopID, checkoutID)
		if errors.Is(err, holdfast.ErrNotFound) {
			// Its wait, in the same transaction.
			h, err = c.waitOrNotFound(ctx, tx, holdfast.RouteRead, shopID, checkoutID)
		}
		return err
	})
	if err != nil {
		return nil, c.settleLapsed(ctx, err)
	}
	return c.viewHold(ctx, zero, true, h), nil
}

// KeysOf is the keys of a shop's lines, in the lines' order.
func KeysOf(shop int64, lines []holdfast.Line) []holdfast.Key {
	keys := make([]holdfast.Key, len(lines))
	for i, l := range lines {
		keys[i] = holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
	}
	return keys
}
