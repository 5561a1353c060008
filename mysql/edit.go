package mysql

import (
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
// A hold past its expiry but not swept can be edited; with TTL 0 it stays
// past its expiry. An ended hold is ErrHoldClaimed, ErrHoldReleased or
// ErrHoldExpired; an unknown checkout ErrNotFound.
//
// Lock order (doc.go, decision 3): like a reservation, the extra units are
// taken from the buffers first, then the hold's row is locked; the hold is
// read before (to know the differences) and checked again under the lock —
// an edit, claim or release that came in between makes the attempt roll
// back and run again. Give-backs only try the keys' lock rows.
func (c *Client) Edit(ctx context.Context, p holdfast.EditParams) (*holdfast.Hold, error) {
	return c.orWait(ctx, p.ShopID, p.CheckoutID, func() (*holdfast.Hold, error) { return c.edit(ctx, nil, p) })
}

// EditTx is Edit inside the caller's transaction (in a savepoint). Begin tx
// with TxOptions.
func (c *Client) EditTx(ctx context.Context, tx *sql.Tx, p holdfast.EditParams) (*holdfast.Hold, error) {
	if tx == nil {
		return nil, holdfast.NewArgumentError("tx", "must not be nil")
	}
	return c.edit(ctx, tx, p)
}

func (c *Client) edit(ctx context.Context, outer *sql.Tx, p holdfast.EditParams) (*holdfast.Hold, error) {
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
	own := outer == nil
	var h *holdfast.Hold
	var grow []holdfast.Line // the last attempt's extra units: what the slow path refills
	var beforeSlow func() error
	if own {
		beforeSlow = func() error { return c.refillInline(ctx, p.ShopID, grow) }
	}
	err = c.runSlow(ctx, outer, holdfast.RouteEdit, true, beforeSlow, func(tx *sql.Tx, level int) error {
		mode := takeFast
		switch {
		case level == 1 && own:
			mode = takeRetry
		case level > 0:
			mode = takeLocked
		}
		var err error
		h, grow, err = c.editOnce(ctx, tx, own, p, lines, raw, mode)
		return err
	})
	c.cfg.Observer.Op(holdfast.RouteEdit, engine.Outcome(err, h), time.Since(start))
	if err != nil {
		return nil, err
	}
	return h, nil
}

// editAnswer answers an edit from the hold as it is: an ended hold's error,
// a replay, a conflict, or nil when the edit is to be applied. editTTL reads
// the TTL of the edit that made cur's revision.
func editAnswer(cur *holdfast.Hold, p holdfast.EditParams, lines []holdfast.Line, editTTL func() (int64, error)) (*holdfast.Hold, error) {
	switch {
	case cur.Status == holdfast.StatusClaimed:
		return nil, holdfast.ErrHoldClaimed
	case cur.Status == holdfast.StatusReleased:
		return nil, holdfast.ErrHoldReleased
	case !cur.Claimable:
		return nil, holdfast.ErrHoldExpired
	}
	if p.Revision == cur.Revision {
		// A retry of the edit that made this revision carries its lines
		// and its TTL; anything else is another edit under a used revision.
		if !slices.Equal(cur.Lines, lines) {
			return nil, holdfast.ErrIdempotencyConflict
		}
		ttl, err := editTTL()
		if err != nil {
			return nil, err
		}
		if ttl != p.TTL.Microseconds() {
			return nil, holdfast.ErrIdempotencyConflict
		}
		cur.Replayed = true
		return cur, nil
	}
	if p.Revision != cur.Revision+1 {
		return nil, &holdfast.RevisionConflictError{Current: cur.Revision, Requested: p.Revision}
	}
	return nil, nil
}

func (c *Client) editOnce(ctx context.Context, tx *sql.Tx, own bool, p holdfast.EditParams, lines []holdfast.Line, raw []byte, mode takeMode) (*holdfast.Hold, []holdfast.Line, error) {
	const route = holdfast.RouteEdit
	id := p.CheckoutID[:]
	cur, err := c.readHold(ctx, tx, route, "hold_get", p.ShopID, p.CheckoutID)
	if err != nil {
		return nil, nil, err
	}
	editTTL := func() (int64, error) {
		var ttl int64
		err := tx.QueryRowContext(ctx, c.q(ctx, route, "edit_ttl"), p.ShopID, id, cur.Revision).Scan(&ttl)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, errRetry // edited since the read: look again
		}
		return ttl, err
	}
	if h, err := editAnswer(cur, p, lines, editTTL); h != nil || err != nil {
		return h, nil, err
	}
	grow, shrink := holdfast.DiffLines(cur.Lines, lines)
	if grown := holdfast.BuyerGrownLines(cur.Lines, lines); len(grown) > 0 {
		// A named buyer's hold grows only within the buyer's limits: the
		// buyer's lock rows before anything else (the lock order, buyer.go).
		var hash []byte
		if err := tx.QueryRowContext(ctx, c.q(ctx, route, "buyer_of"), p.ShopID, id).Scan(&hash); err != nil {
			return nil, nil, err
		}
		if hash != nil {
			over, err := c.enforceBuyer(ctx, tx, own, route, p.ShopID, p.CheckoutID, grown, hash)
			if err != nil {
				return nil, nil, err
			}
			if over != nil {
				return nil, nil, over
			}
		}
	}
	if len(grow) > 0 {
		growRaw, err := json.Marshal(grow)
		if err != nil {
			return nil, nil, err
		}
		short, err := c.take(ctx, tx, own, route, p.ShopID, grow, growRaw, mode)
		if err != nil {
			return nil, grow, err
		}
		if len(short) > 0 {
			return nil, grow, &holdfast.InsufficientStockError{Lines: holdfast.EditShortfall(cur.Lines, lines, short)}
		}
	}
	locked, err := c.readHold(ctx, tx, route, "hold_lock", p.ShopID, p.CheckoutID)
	if err != nil {
		return nil, grow, err
	}
	if locked.Revision != cur.Revision || !locked.Claimable {
		// Edited, claimed or released since the first read: what this
		// attempt took goes back with the rollback; look again.
		return nil, grow, errRetry
	}
	now, us := c.now(), p.TTL.Microseconds()
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "edit_hold"), string(raw), p.Revision, us, us, now, us, p.ShopID, id); err != nil {
		return nil, grow, err
	}
	// The hold's lines are rewritten from its record, in this transaction:
	// no other transaction sees the checkout without its kept units.
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_delete"), p.ShopID, id); err != nil {
		return nil, grow, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_create"), p.ShopID, id); err != nil {
		return nil, grow, err
	}
	if len(shrink) > 0 {
		if err := c.returnUnits(ctx, tx, own, route, lineKeys(p.ShopID, shrink)); err != nil {
			return nil, grow, err
		}
	}
	h, err := c.readHold(ctx, tx, route, "hold_get", p.ShopID, p.CheckoutID)
	if err != nil {
		return nil, grow, err
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
// the late claim of every line). Like Claim it locks the hold first and
// touches no buffer but by trying the keys' lock rows to give units back.
func (c *Client) ClaimLines(ctx context.Context, shopID int64, checkoutID uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	return c.orWait(ctx, shopID, checkoutID, func() (*holdfast.Hold, error) {
		return c.claimLines(ctx, nil, shopID, checkoutID, lines)
	})
}

// ClaimLinesTx is ClaimLines inside the caller's transaction (in a
// savepoint), so the application's order row and the claim commit
// together. Begin tx with TxOptions.
func (c *Client) ClaimLinesTx(ctx context.Context, tx *sql.Tx, shopID int64, checkoutID uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	if tx == nil {
		return nil, holdfast.NewArgumentError("tx", "must not be nil")
	}
	return c.claimLines(ctx, tx, shopID, checkoutID, lines)
}

func (c *Client) claimLines(ctx context.Context, outer *sql.Tx, shop int64, checkout uuid.UUID, in []holdfast.Line) (*holdfast.Hold, error) {
	start := time.Now()
	want, err := holdfast.ValidateClaimLines(c.cfg, shop, checkout, in)
	if err != nil {
		c.cfg.Observer.Op(holdfast.RouteClaim, engine.Outcome(err, nil), time.Since(start))
		return nil, err
	}
	var h *holdfast.Hold
	err = c.run(ctx, outer, holdfast.RouteClaim, true, func(tx *sql.Tx, _ int) error {
		var err error
		h, err = c.claimLinesOnce(ctx, tx, outer == nil, shop, checkout, in, want)
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

func (c *Client) claimLinesOnce(ctx context.Context, tx *sql.Tx, own bool, shop int64, checkout uuid.UUID, in, want []holdfast.Line) (*holdfast.Hold, error) {
	const route = holdfast.RouteClaim
	cur, err := c.readHold(ctx, tx, route, "hold_lock", shop, checkout)
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
	var rawReleased any
	if len(released) > 0 {
		b, err := json.Marshal(released)
		if err != nil {
			return nil, err
		}
		rawReleased = string(b)
	}
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "claim_lines_end"), string(rawClaimed), rawReleased, c.now(), shop, checkout[:])
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, err
	} else if n == 0 {
		return nil, errRetry // cannot happen while we hold the row
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_delete"), shop, checkout[:]); err != nil {
		return nil, err
	}
	if err := c.deduct(ctx, tx, route, shop, checkout, claimed, "claim"); err != nil {
		return nil, err
	}
	if len(released) > 0 {
		if err := c.returnUnits(ctx, tx, own, route, lineKeys(shop, released)); err != nil {
			return nil, err
		}
	}
	return c.readHold(ctx, tx, route, "hold_get", shop, checkout)
}

func lineKeys(shop int64, lines []holdfast.Line) []holdfast.Key {
	keys := make([]holdfast.Key, len(lines))
	for i, l := range lines {
		keys[i] = holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
	}
	return keys
}
