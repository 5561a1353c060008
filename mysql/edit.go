package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

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
		if err := tx.QueryRowContext(ctx, c.q(ctx, route, "buyer_of"), p.ShopID, id, p.ShopID, id).Scan(&hash); err != nil {
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
		if err := c.returnUnits(ctx, tx, own, route, engine.KeysOf(p.ShopID, shrink)); err != nil {
			return nil, grow, err
		}
	}
	h, err := c.readHold(ctx, tx, route, "hold_get", p.ShopID, p.CheckoutID)
	if err != nil {
		return nil, grow, err
	}
	return h, grow, nil
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
		if err := c.returnUnits(ctx, tx, own, route, engine.KeysOf(shop, released)); err != nil {
			return nil, err
		}
	}
	return c.readHold(ctx, tx, route, "hold_get", shop, checkout)
}
