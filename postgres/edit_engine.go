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
		if err := c.returnUnits(ctx, tx, route, engine.KeysOf(p.ShopID, shrink)); err != nil {
			return nil, grow, err
		}
	}
	return h, grow, nil
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
		if err := c.returnUnits(ctx, tx, route, engine.KeysOf(shop, released)); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// unmarshalReleased reads a hold's released column (NULL for all but
// partial claims).
func unmarshalReleased(raw []byte, h *holdfast.Hold) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, &h.Released)
}
