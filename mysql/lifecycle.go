package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// Claim converts a checkout's hold into a permanent deduction: in one
// transaction its lines leave reserved_quantities, available drops by each
// line, and the audit trail records each line with the checkout as
// reference. Claim touches only holds, reserved_quantities and the ledger
// (seed decision 3), never a buffer — but for a late claim.
//
// A repeated Claim returns the claimed hold with Replayed set. A released
// checkout is ErrHoldReleased. A hold that expired but was not yet swept is
// still claimable (its units never went back). Once swept, Claim takes the
// same lines afresh from sellable stock in the same transaction; when it
// cannot, the error is an *ExpiredError with the shortfall: refund.
func (c *Client) Claim(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	h, err := c.orWait(ctx, shopID, checkoutID, func() (*holdfast.Hold, error) { return c.claim(ctx, nil, shopID, checkoutID) })
	if err == nil && !h.Replayed {
		// Claimed units never come back: a wait that asked for them ends
		// now (waitlist.go).
		keys := make([]holdfast.Key, len(h.Lines))
		for i, l := range h.Lines {
			keys[i] = holdfast.Key{ShopID: shopID, ItemID: l.ItemID, LocationID: l.LocationID}
		}
		c.endUnservableOn(ctx, holdfast.RouteClaim, keys)
	}
	return h, err
}

// ClaimTx is Claim inside the caller's transaction (in a savepoint), so the
// application's order row and the claim commit together. Begin tx with
// TxOptions.
func (c *Client) ClaimTx(ctx context.Context, tx *sql.Tx, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	if tx == nil {
		return nil, argError("tx", "must not be nil")
	}
	return c.claim(ctx, tx, shopID, checkoutID)
}

func (c *Client) claim(ctx context.Context, outer *sql.Tx, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	start := time.Now()
	if err := validateCheckout(shop, checkout); err != nil {
		c.cfg.Observer.Op(holdfast.RouteClaim, engine.Outcome(err, nil), time.Since(start))
		return nil, err
	}
	var h *holdfast.Hold
	err := c.run(ctx, outer, holdfast.RouteClaim, true, func(tx *sql.Tx, _ int) error {
		var err error
		h, err = c.claimOnce(ctx, tx, outer == nil, shop, checkout)
		return err
	})
	c.cfg.Observer.Op(holdfast.RouteClaim, engine.Outcome(err, h), time.Since(start))
	if err != nil {
		return nil, err
	}
	if !h.Replayed && h.EndedAt != nil {
		c.cfg.Observer.Claimed(h.EndedAt.Sub(h.CreatedAt))
	}
	return h, nil
}

func (c *Client) claimOnce(ctx context.Context, tx *sql.Tx, own bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	const route = holdfast.RouteClaim
	h, err := c.endHold(ctx, tx, route, shop, checkout, holdfast.StatusHeld, holdfast.StatusClaimed)
	if err != nil {
		return nil, err
	}
	if h == nil {
		cur, err := c.readHold(ctx, tx, route, "hold_lock", shop, checkout)
		if err != nil {
			return nil, err
		}
		switch {
		case cur.Status == holdfast.StatusClaimed:
			cur.Replayed = true
			return cur, nil
		case cur.Status == holdfast.StatusReleased:
			return nil, holdfast.ErrHoldReleased
		case cur.Claimable:
			// Held (past its expiry or not): decided and undone meanwhile;
			// look again.
			return nil, errRetry
		default:
			return c.lateClaim(ctx, tx, own, shop, checkout)
		}
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_delete"), shop, checkout[:]); err != nil {
		return nil, err
	}
	if err := c.deduct(ctx, tx, route, shop, checkout, h.Lines, "claim"); err != nil {
		return nil, err
	}
	return h, nil
}

// lateClaim serves a claim whose hold was swept: the same lines, taken
// afresh from sellable stock, or an *ExpiredError with the shortfall.
func (c *Client) lateClaim(ctx context.Context, tx *sql.Tx, own bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	const route = holdfast.RouteClaim
	h, err := c.endHold(ctx, tx, route, shop, checkout, holdfast.StatusExpired, holdfast.StatusClaimed)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errRetry
	}
	// A named buyer's late claim is a new sale: within its limits (buyer.go).
	if err := c.checkBuyerLate(ctx, tx, own, shop, checkout, h.Lines); err != nil {
		return nil, err
	}
	// The keys' lock rows first, in key order, as adjustments take them:
	// both then touch levels and buffers only while holding them, so a late
	// claim and a stock change never wait for each other in a cycle.
	var short []holdfast.Shortfall
	for _, l := range h.Lines {
		k := holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
		locked, err := c.lockKey(ctx, tx, route, k)
		if err != nil {
			return nil, err
		}
		if !locked {
			short = append(short, holdfast.Shortfall{ItemID: l.ItemID, LocationID: l.LocationID, Requested: l.Quantity})
		}
	}
	if len(short) > 0 {
		return nil, &holdfast.ExpiredError{Lines: short}
	}
	raw, _ := json.Marshal(h.Lines)
	short, err = c.take(ctx, tx, own, route, shop, h.Lines, raw, takeLocked)
	if err != nil {
		return nil, err
	}
	if len(short) > 0 {
		return nil, &holdfast.ExpiredError{Lines: short}
	}
	if err := c.deduct(ctx, tx, route, shop, checkout, h.Lines, "claim-after-expiry"); err != nil {
		return nil, err
	}
	return h, nil
}

// deduct lowers available by each line, in key order, each UPDATE guarded
// by available >= q, then writes the lines' audit entries in one statement.
func (c *Client) deduct(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line, reason string) error {
	for _, l := range lines {
		res, err := tx.ExecContext(ctx, c.q(ctx, route, "claim_line"), l.Quantity, c.now(), shop, l.ItemID, l.LocationID, l.Quantity)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var avail int
			err := tx.QueryRowContext(ctx, c.q(ctx, route, "level_lock"), shop, l.ItemID, l.LocationID).Scan(&avail)
			if errors.Is(err, sql.ErrNoRows) {
				return errors.New("holdfast/mysql: claimed line has no inventory level")
			}
			if err != nil {
				return err
			}
			return holdfast.ErrOverCommitted
		}
	}
	raw, _ := json.Marshal(lines)
	_, err := tx.ExecContext(ctx, c.q(ctx, route, "ledger_lines"), reason, checkout.String(), c.now(), string(raw), shop)
	return err
}

// Release gives a checkout's held units back: its lines leave
// reserved_quantities and, where the key's lock row is free, go straight
// back into the key's buffer (otherwise the replenisher or the next short
// reservation refills it). Releasing twice returns the released hold with
// Replayed set; releasing a hold that expired returns it with status
// expired — also one past its expiry not swept yet, which the release ends
// as expired (its units go back). Releasing a claimed checkout is
// ErrHoldClaimed.
func (c *Client) Release(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	h, err := c.release(ctx, nil, shopID, checkoutID)
	if (err == nil && !h.Replayed) || errors.Is(err, holdfast.ErrWaitCancelled) {
		c.kickWaitlist() // units came back, or a wait ended: waiters first (waitlist.go)
	}
	return h, err
}

// ReleaseTx is Release inside the caller's transaction (in a savepoint).
// Begin tx with TxOptions.
func (c *Client) ReleaseTx(ctx context.Context, tx *sql.Tx, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	if tx == nil {
		return nil, argError("tx", "must not be nil")
	}
	return c.release(ctx, tx, shopID, checkoutID)
}

func (c *Client) release(ctx context.Context, outer *sql.Tx, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	start := time.Now()
	if err := validateCheckout(shop, checkout); err != nil {
		c.cfg.Observer.Op(holdfast.RouteRelease, engine.Outcome(err, nil), time.Since(start))
		return nil, err
	}
	var h *holdfast.Hold
	var answer error
	err := c.run(ctx, outer, holdfast.RouteRelease, true, func(tx *sql.Tx, _ int) error {
		var err error
		h, answer = nil, nil
		h, err = c.releaseOnce(ctx, tx, outer == nil, shop, checkout)
		if errors.Is(err, holdfast.ErrNotFound) {
			// No hold: releasing a waiting checkout cancels its wait
			// (waitlist.go).
			answer, err = c.cancelWait(ctx, tx, holdfast.RouteRelease, shop, checkout)
		}
		return err
	})
	err = cmp.Or(err, answer)
	c.cfg.Observer.Op(holdfast.RouteRelease, engine.Outcome(err, h), time.Since(start))
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (c *Client) releaseOnce(ctx context.Context, tx *sql.Tx, own bool, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	const route = holdfast.RouteRelease
	h, err := c.endHold(ctx, tx, route, shop, checkout, holdfast.StatusHeld, holdfast.StatusReleased)
	if err != nil {
		return nil, err
	}
	if h == nil {
		cur, err := c.readHold(ctx, tx, route, "hold_lock", shop, checkout)
		if err != nil {
			return nil, err
		}
		switch {
		case cur.Status == holdfast.StatusClaimed:
			return nil, holdfast.ErrHoldClaimed
		case cur.Claimable:
			return nil, errRetry
		default:
			cur.Replayed = true
			return cur, nil
		}
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_delete"), shop, checkout[:]); err != nil {
		return nil, err
	}
	keys := make([]holdfast.Key, len(h.Lines))
	for i, l := range h.Lines {
		keys[i] = holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
	}
	if err := c.returnUnits(ctx, tx, own, route, keys); err != nil {
		return nil, err
	}
	return h, nil
}

// Extend moves a held checkout's expiry to now + ttl, never past its
// deadline (creation + Config.HoldLifetimeMax): beyond it the error is
// ErrLifetimeExceeded. A hold that expired but was not swept can be
// extended (its units never went back). An ended hold is ErrHoldClaimed,
// ErrHoldReleased or ErrHoldExpired.
func (c *Client) Extend(ctx context.Context, shopID int64, checkoutID uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	return c.orWait(ctx, shopID, checkoutID, func() (*holdfast.Hold, error) {
		return c.extend(ctx, nil, shopID, checkoutID, ttl)
	})
}

// ExtendTx is Extend inside the caller's transaction (in a savepoint).
func (c *Client) ExtendTx(ctx context.Context, tx *sql.Tx, shopID int64, checkoutID uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	if tx == nil {
		return nil, argError("tx", "must not be nil")
	}
	return c.extend(ctx, tx, shopID, checkoutID, ttl)
}

func (c *Client) extend(ctx context.Context, outer *sql.Tx, shop int64, checkout uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	start := time.Now()
	err := validateCheckout(shop, checkout)
	if err == nil && (ttl < holdfast.HoldTTLMin || ttl > c.cfg.HoldLifetimeMax) {
		err = argError("ttl", "must be between %v and %v", holdfast.HoldTTLMin, c.cfg.HoldLifetimeMax)
	}
	if err != nil {
		c.cfg.Observer.Op(holdfast.RouteExtend, engine.Outcome(err, nil), time.Since(start))
		return nil, err
	}
	var h *holdfast.Hold
	err = c.run(ctx, outer, holdfast.RouteExtend, true, func(tx *sql.Tx, _ int) error {
		var err error
		h, err = c.extendOnce(ctx, tx, shop, checkout, ttl)
		return err
	})
	c.cfg.Observer.Op(holdfast.RouteExtend, engine.Outcome(err, h), time.Since(start))
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (c *Client) extendOnce(ctx context.Context, tx *sql.Tx, shop int64, checkout uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	const route = holdfast.RouteExtend
	now, us := c.now(), ttl.Microseconds()
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "extend_hold"), now, us, shop, checkout[:], now, us)
	if err != nil {
		return nil, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		// Not changed: ended, past its deadline, or already at exactly this
		// expiry (MySQL counts changed rows, not matched ones).
		var status string
		var fits bool
		err := tx.QueryRowContext(ctx, c.q(ctx, route, "extend_check"), now, us, shop, checkout[:]).Scan(&status, &fits)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil, holdfast.ErrNotFound
		case err != nil:
			return nil, err
		}
		switch holdfast.Status(status) {
		case holdfast.StatusClaimed:
			return nil, holdfast.ErrHoldClaimed
		case holdfast.StatusReleased:
			return nil, holdfast.ErrHoldReleased
		case holdfast.StatusExpired:
			return nil, holdfast.ErrHoldExpired
		}
		if !fits {
			return nil, holdfast.ErrLifetimeExceeded
		}
	}
	h, err := c.readHold(ctx, tx, route, "hold_get", shop, checkout)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "extend_lines"), h.ExpiresAt, shop, checkout[:]); err != nil {
		return nil, err
	}
	return h, nil
}

// Hold returns a checkout's hold or outcome. A hold past its expiry that
// the sweeper has not taken yet reports StatusExpired with Claimable set:
// a claim still succeeds (its units never went back), an Extend still
// revives it, a Release ends it as expired.
func (c *Client) Hold(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	if err := validateCheckout(shopID, checkoutID); err != nil {
		return nil, err
	}
	var h *holdfast.Hold
	err := c.run(ctx, nil, holdfast.RouteRead, true, func(tx *sql.Tx, _ int) error {
		var err error
		h, err = c.readHold(ctx, tx, holdfast.RouteRead, "hold_get", shopID, checkoutID)
		if errors.Is(err, holdfast.ErrNotFound) {
			// Its wait, in the same transaction (waitlist.go).
			h, err = c.waitOrNotFound(ctx, tx, holdfast.RouteRead, shopID, checkoutID, nil)
		}
		return err
	})
	if err != nil {
		return nil, c.settleLapsed(ctx, err)
	}
	return h, nil
}

func (c *Client) readHold(ctx context.Context, tx *sql.Tx, route, stmt string, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	h := &holdfast.Hold{CheckoutID: checkout, ShopID: shop}
	var raw []byte
	var status string
	var ended sql.NullTime
	var lapsed bool
	var released []byte
	err := tx.QueryRowContext(ctx, c.q(ctx, route, stmt), c.now(), shop, checkout[:]).
		Scan(&status, &raw, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &ended, &lapsed, &h.Revision, &released)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, holdfast.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	h.Status = holdfast.Status(status)
	h.Claimable = h.Status == holdfast.StatusHeld
	if lapsed {
		// Past its expiry, not swept yet: expired, and still claimable
		// (its units never went back).
		h.Status = holdfast.StatusExpired
	}
	if ended.Valid {
		t := ended.Time
		h.EndedAt = &t
	}
	if err := json.Unmarshal(raw, &h.Lines); err != nil {
		return nil, err
	}
	slices.SortFunc(h.Lines, compareLines)
	if len(released) > 0 && string(released) != "null" {
		if err := json.Unmarshal(released, &h.Released); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// endHold moves a hold from one status to another with one guarded
// statement and returns it as it is now; nil when it was not in the
// expected status. The UPDATE is a locking read: it waits for a
// reservation of the same checkout in flight and sees what it committed.
func (c *Client) endHold(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID, from, to holdfast.Status) (*holdfast.Hold, error) {
	now := c.now()
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "end_hold"), string(to), now, string(to), now, shop, checkout[:], string(from))
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return nil, err
	}
	return c.readHold(ctx, tx, route, "hold_get", shop, checkout)
}
