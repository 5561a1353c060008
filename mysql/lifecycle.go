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

// claimOnce is one claim attempt (driver.Lifecycle.ClaimAttempt).
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
	slices.SortFunc(h.Lines, holdfast.CompareLines)
	h.MergedInto = engine.MergedInto(raw) // merge.go
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
