package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/jackc/pgx/v5"
)

// Edit replaces a held checkout's lines with p.Lines in one transaction:
// only the differences move — extra units are taken from their keys'
// buffers (the paths Reserve takes, refills included), units no longer
// wanted go back (as Release gives them back) — so the units the checkout
// keeps never leave it. All or nothing: when a line cannot be had the hold
// stays exactly as it was and the error is an *InsufficientStockError
// naming the line (Requested: its new quantity; Sellable: the most this
// checkout could hold, what it holds included).
//
// Edit is idempotent on p.Revision, the revision it makes (the hold's
// current revision + 1): a retry of the same revision, lines and TTL answers
// the hold with Replayed set (and moves nothing); the same revision with
// other lines or another TTL is ErrIdempotencyConflict (revision 1, the
// reservation, carries TTL 0); any other revision is a
// *RevisionConflictError.
// A hold past its expiry but not swept can be edited (its units are still
// its own); with TTL 0 it stays past its expiry. An ended hold is
// ErrHoldClaimed, ErrHoldReleased or ErrHoldExpired; an unknown checkout
// ErrNotFound. A Reserve retry of the checkout's original lines after an
// edit is ErrIdempotencyConflict: the hold has other lines now.
//
// Lock order (postgres/migrate/sql/001_init.sql): the hold's row first, then the
// keys' advisory locks and buffers as Reserve takes them, then
// reserved_quantities; give-backs only try key locks.
func (c *Client) Edit(ctx context.Context, p holdfast.EditParams) (*holdfast.Hold, error) {
	return c.orWait(ctx, p.ShopID, p.CheckoutID, func() (*holdfast.Hold, error) { return c.edit(ctx, c.pool, true, p) })
}

// EditTx is Edit inside the caller's transaction, in a savepoint: on any
// error the caller's transaction is left as it was. The edit takes effect
// once the caller commits.
func (c *Client) EditTx(ctx context.Context, tx pgx.Tx, p holdfast.EditParams) (*holdfast.Hold, error) {
	return c.edit(ctx, tx, false, p)
}

func (c *Client) edit(ctx context.Context, b beginner, own bool, p holdfast.EditParams) (*holdfast.Hold, error) {
	start := time.Now()
	lines, err := holdfast.ValidateEdit(c.cfg, p)
	if err != nil {
		c.cfg.Observer.Op(holdfast.RouteEdit, engine.Outcome(err, nil), time.Since(start))
		return nil, err
	}
	raw, err := json.Marshal(lines)
	if err != nil {
		return nil, err
	}
	var h *holdfast.Hold
	// grow is the last attempt's extra units: what the slow path refills.
	var grow []holdfast.Line
	var beforeSlow func() error
	if own {
		beforeSlow = func() error { return c.refillInline(ctx, p.ShopID, grow) }
	}
	err = c.runSlow(ctx, b, holdfast.RouteEdit, own, true, beforeSlow, func(tx pgx.Tx, level int) error {
		mode := takeFast
		switch {
		case level == 1 && own:
			mode = takeRetry
		case level > 0:
			mode = takeLocked
		}
		var err error
		h, grow, err = c.editOnce(ctx, tx, p, lines, raw, mode)
		return err
	})
	c.cfg.Observer.Op(holdfast.RouteEdit, engine.Outcome(err, h), time.Since(start))
	if err != nil {
		return nil, err
	}
	if own && !h.Replayed {
		// As after a reservation: the grown keys are the replenisher's
		// to top up, and a moved expiry the sweeper's to wait for.
		c.noteReserved(p.ShopID, grow)
		if p.TTL > 0 {
			c.noteHold(h)
		}
	}
	return h, nil
}

func (c *Client) editOnce(ctx context.Context, tx pgx.Tx, p holdfast.EditParams, lines []holdfast.Line, raw []byte, mode takeMode) (*holdfast.Hold, []holdfast.Line, error) {
	const route = holdfast.RouteEdit
	cur, err := c.lockHold(ctx, tx, route, p.ShopID, p.CheckoutID)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case cur.Status == holdfast.StatusClaimed:
		return nil, nil, holdfast.ErrHoldClaimed
	case cur.Status == holdfast.StatusReleased:
		return nil, nil, holdfast.ErrHoldReleased
	case !cur.Claimable:
		return nil, nil, holdfast.ErrHoldExpired
	}
	if p.Revision == cur.Revision {
		// A retry of the edit that made this revision carries its lines
		// and its TTL; anything else is another edit under a used revision.
		if !slices.Equal(cur.Lines, lines) {
			return nil, nil, holdfast.ErrIdempotencyConflict
		}
		var ttl int64
		if err := tx.QueryRow(ctx, c.q(ctx, route, "edit_ttl"), p.CheckoutID, p.ShopID, p.Revision).Scan(&ttl); err != nil {
			return nil, nil, err // no row cannot happen while we hold the row
		}
		if ttl != p.TTL.Microseconds() {
			return nil, nil, holdfast.ErrIdempotencyConflict
		}
		cur.Replayed = true
		return cur, nil, nil
	}
	if p.Revision != cur.Revision+1 {
		return nil, nil, &holdfast.RevisionConflictError{Current: cur.Revision, Requested: p.Revision}
	}
	grow, shrink := holdfast.DiffLines(cur.Lines, lines)
	if grown := holdfast.BuyerGrownLines(cur.Lines, lines); len(grown) > 0 {
		// A named buyer's hold grows only within the buyer's limits: after
		// the hold row, before any key lock (the lock order, buyer.go).
		var hash []byte
		if err := tx.QueryRow(ctx, c.q(ctx, route, "buyer_of"), p.ShopID, p.CheckoutID).Scan(&hash); err != nil {
			return nil, nil, err
		}
		if hash != nil {
			if err := c.enforceBuyer(ctx, tx, route, p.ShopID, p.CheckoutID, grown, hash, false); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(grow) > 0 {
		short, err := c.take(ctx, tx, route, p.ShopID, grow, mode)
		if err != nil {
			return nil, grow, err
		}
		if len(short) > 0 {
			return nil, grow, &holdfast.InsufficientStockError{Lines: holdfast.EditShortfall(cur.Lines, lines, short)}
		}
	}
	h := &holdfast.Hold{CheckoutID: p.CheckoutID, ShopID: p.ShopID, Status: holdfast.StatusHeld, Claimable: true, Lines: lines, Revision: p.Revision}
	var lapsed bool
	err = tx.QueryRow(ctx, c.q(ctx, route, "edit_hold"), p.CheckoutID, p.ShopID, string(raw), p.Revision, p.TTL.Microseconds(), c.now()).
		Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline, &lapsed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, grow, errRetry // cannot happen while we hold the row
	}
	if err != nil {
		return nil, grow, err
	}
	if lapsed {
		h.Status = holdfast.StatusExpired
	}
	items, locs, qtys := columns(lines)
	if _, err := tx.Exec(ctx, c.q(ctx, route, "edit_lines"), p.CheckoutID, p.ShopID, items, locs, qtys, h.ExpiresAt, h.CreatedAt); err != nil {
		return nil, grow, err
	}
	if len(shrink) > 0 {
		if err := c.returnUnits(ctx, tx, route, lineKeys(p.ShopID, shrink)); err != nil {
			return nil, grow, err
		}
	}
	return h, grow, nil
}

// ClaimLines claims part of a held checkout and gives the rest back, in one
// transaction: the buyer paid for less than was held. Each given line
// names a held line and a quantity up to what it holds; held lines not
// given are released whole. The answer's Lines are what was claimed (the
// ledger drops by exactly these), Released what went back. A line the hold
// does not have, or a quantity above what it holds, is an *ArgumentError
// naming it, and nothing changes.
//
// A retry of the same partial claim answers the claimed hold with Replayed
// set; a claimed checkout with other lines is ErrHoldClaimed. A released
// checkout is ErrHoldReleased. A hold past its expiry but not swept is
// still claimable; once swept, ClaimLines is ErrHoldExpired (Claim serves
// the late claim of every line).
func (c *Client) ClaimLines(ctx context.Context, shopID int64, checkoutID uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	return c.orWait(ctx, shopID, checkoutID, func() (*holdfast.Hold, error) {
		return c.claimLines(ctx, c.pool, true, shopID, checkoutID, lines)
	})
}

// ClaimLinesTx is ClaimLines inside the caller's transaction (in a
// savepoint), so the application's order row and the claim commit together.
func (c *Client) ClaimLinesTx(ctx context.Context, tx pgx.Tx, shopID int64, checkoutID uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	return c.claimLines(ctx, tx, false, shopID, checkoutID, lines)
}

func (c *Client) claimLines(ctx context.Context, b beginner, own bool, shop int64, checkout uuid.UUID, in []holdfast.Line) (*holdfast.Hold, error) {
	start := time.Now()
	want, err := holdfast.ValidateClaimLines(c.cfg, shop, checkout, in)
	if err != nil {
		c.cfg.Observer.Op(holdfast.RouteClaim, engine.Outcome(err, nil), time.Since(start))
		return nil, err
	}
	var h *holdfast.Hold
	err = c.run(ctx, b, holdfast.RouteClaim, own, true, func(tx pgx.Tx, _ int) error {
		var err error
		h, err = c.claimLinesOnce(ctx, tx, shop, checkout, in, want)
		return err
	})
	c.cfg.Observer.Op(holdfast.RouteClaim, engine.Outcome(err, h), time.Since(start))
	if err != nil {
		return nil, err
	}
	if !h.Replayed {
		c.cfg.Observer.Claimed(h.EndedAt.Sub(h.CreatedAt))
	}
	return h, nil
}

func (c *Client) claimLinesOnce(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, in, want []holdfast.Line) (*holdfast.Hold, error) {
	const route = holdfast.RouteClaim
	cur, err := c.lockHold(ctx, tx, route, shop, checkout)
	if err != nil {
		return nil, err
	}
	switch {
	case cur.Status == holdfast.StatusClaimed:
		if slices.Equal(cur.Lines, want) {
			cur.Replayed = true
			return cur, nil
		}
		return nil, holdfast.ErrHoldClaimed
	case cur.Status == holdfast.StatusReleased:
		return nil, holdfast.ErrHoldReleased
	case !cur.Claimable:
		return nil, holdfast.ErrHoldExpired
	}
	claimed, released, err := holdfast.SplitClaim(cur.Lines, in)
	if err != nil {
		return nil, err
	}
	rawClaimed, err := json.Marshal(claimed)
	if err != nil {
		return nil, err
	}
	var rawReleased *string
	if len(released) > 0 {
		b, err := json.Marshal(released)
		if err != nil {
			return nil, err
		}
		s := string(b)
		rawReleased = &s
	}
	h := &holdfast.Hold{CheckoutID: checkout, ShopID: shop, Status: holdfast.StatusClaimed, Lines: claimed, Released: released}
	var ended time.Time
	err = tx.QueryRow(ctx, c.q(ctx, route, "claim_lines_end"), checkout, shop, string(rawClaimed), rawReleased, c.now()).
		Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline, &ended, &h.Revision)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errRetry // cannot happen while we hold the row
	}
	if err != nil {
		return nil, err
	}
	h.EndedAt = &ended
	if _, err := tx.Exec(ctx, c.q(ctx, route, "hold_lines_delete"), checkout, shop); err != nil {
		return nil, err
	}
	if err := c.deduct(ctx, tx, route, shop, checkout, claimed, "claim"); err != nil {
		return nil, err
	}
	if len(released) > 0 {
		if err := c.returnUnits(ctx, tx, route, lineKeys(shop, released)); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func lineKeys(shop int64, lines []holdfast.Line) []holdfast.Key {
	keys := make([]holdfast.Key, len(lines))
	for i, l := range lines {
		keys[i] = holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
	}
	return keys
}

// unmarshalReleased reads a hold's released column (NULL for all but
// partial claims).
func unmarshalReleased(raw []byte, h *holdfast.Hold) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, &h.Released)
}
