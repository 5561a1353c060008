package postgres

import (
	"cmp"
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

// claimOnce is one claim attempt (driver.Lifecycle.ClaimAttempt).
func (c *Client) claimOnce(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	h, err := c.endHold(ctx, tx, holdfast.RouteClaim, shop, checkout, holdfast.StatusHeld, holdfast.StatusClaimed)
	if err != nil {
		return nil, err
	}
	if h == nil {
		cur, err := c.lockHold(ctx, tx, holdfast.RouteClaim, shop, checkout)
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
			// The hold's reservation committed after our UPDATE's
			// snapshot; we hold its row now, so this one sees it.
			if h, err = c.endHold(ctx, tx, holdfast.RouteClaim, shop, checkout, holdfast.StatusHeld, holdfast.StatusClaimed); err != nil || h == nil {
				return nil, cmp.Or(err, errRetry)
			}
		default:
			return c.lateClaim(ctx, tx, shop, checkout)
		}
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteClaim, "hold_lines_delete"), checkout, shop); err != nil {
		return nil, err
	}
	if err := c.deduct(ctx, tx, holdfast.RouteClaim, shop, checkout, h.Lines, "claim"); err != nil {
		return nil, err
	}
	return h, nil
}

// lateClaim serves a claim whose hold was swept: the same lines, taken
// afresh from sellable stock, or an *ExpiredError with the shortfall.
func (c *Client) lateClaim(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	h, err := c.endHold(ctx, tx, holdfast.RouteClaim, shop, checkout, holdfast.StatusExpired, holdfast.StatusClaimed)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errRetry
	}
	// A named buyer's late claim is a new sale: within its limits (buyer.go).
	if err := c.checkBuyerLate(ctx, tx, shop, checkout, h.Lines); err != nil {
		return nil, err
	}
	// Take the keys' advisory locks first, in key order, as adjustments
	// do: both then touch levels and buffers only while holding them, so a
	// late claim and a stock adjustment never wait for each other in a
	// cycle.
	for _, l := range h.Lines {
		if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteClaim, "lock_key"), keyHash(holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID})); err != nil {
			return nil, err
		}
	}
	short, err := c.take(ctx, tx, holdfast.RouteClaim, shop, h.Lines, takeLocked)
	if err != nil {
		return nil, err
	}
	if len(short) > 0 {
		return nil, &holdfast.ExpiredError{Lines: short}
	}
	if err := c.deduct(ctx, tx, holdfast.RouteClaim, shop, checkout, h.Lines, "claim-after-expiry"); err != nil {
		return nil, err
	}
	return h, nil
}

// deduct lowers available by each line, in key order, with audit entries.
func (c *Client) deduct(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line, reason string) error {
	batch := &pgx.Batch{}
	ref := checkout.String()
	for _, l := range lines {
		batch.Queue(c.q(ctx, route, "claim_line"), shop, l.ItemID, l.LocationID, l.Quantity, reason, ref)
	}
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	for range lines {
		var after int
		err := br.QueryRow().Scan(&after)
		if SQLState(err) == sqlstateCheckViolation {
			return holdfast.ErrOverCommitted
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return errors.New("holdfast: claimed line has no inventory level")
		}
		if err != nil {
			return err
		}
	}
	return br.Close()
}

func (c *Client) releaseOnce(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	h, err := c.endHold(ctx, tx, holdfast.RouteRelease, shop, checkout, holdfast.StatusHeld, holdfast.StatusReleased)
	if err != nil {
		return nil, err
	}
	if h == nil {
		cur, err := c.lockHold(ctx, tx, holdfast.RouteRelease, shop, checkout)
		if err != nil {
			return nil, err
		}
		switch {
		case cur.Status == holdfast.StatusClaimed:
			return nil, holdfast.ErrHoldClaimed
		case cur.Claimable:
			// Committed after our UPDATE's snapshot; locked now.
			if h, err = c.endHold(ctx, tx, holdfast.RouteRelease, shop, checkout, holdfast.StatusHeld, holdfast.StatusReleased); err != nil || h == nil {
				return nil, cmp.Or(err, errRetry)
			}
		default:
			cur.Replayed = true
			return cur, nil
		}
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteRelease, "hold_lines_delete"), checkout, shop); err != nil {
		return nil, err
	}
	keys := make([]holdfast.Key, len(h.Lines))
	for i, l := range h.Lines {
		keys[i] = holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
	}
	if err := c.returnUnits(ctx, tx, holdfast.RouteRelease, keys); err != nil {
		return nil, err
	}
	return h, nil
}

// returnUnits refills the buffers of keys whose holds just ended, for the
// keys whose advisory lock and counter rows are free right now. It never
// waits, so it never blocks or fails the release or sweep it follows: a key
// being refilled, adjusted or reserved by someone else is left to them and
// the replenisher.
func (c *Client) returnUnits(ctx context.Context, tx pgx.Tx, route string, keys []holdfast.Key) (err error) {
	hashes := make([]int64, len(keys))
	for i, k := range keys {
		hashes[i] = keyHash(k)
	}
	rows, err := tx.Query(ctx, c.q(ctx, route, "trylock_keys"), hashes)
	if err != nil {
		return err
	}
	var locked []holdfast.Key
	got := make(map[int]bool, len(keys))
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			return err
		}
		got[n-1] = true
		locked = append(locked, keys[n-1])
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var skipped []holdfast.Key
	for i, k := range keys {
		if !got[i] {
			skipped = append(skipped, k)
		}
	}
	defer func() {
		// Keys left to the replenisher are queued for it, in this
		// transaction: its pass works on changed keys only.
		if err == nil && len(skipped) > 0 {
			err = c.queueKeys(ctx, tx, route, skipped)
		}
	}()
	if len(locked) == 0 {
		return nil
	}
	// The refill writes counter rows; one a caller's open ReserveTx holds
	// would make it wait, past lock_timeout, and fail the release or
	// sweep it is only an optional step of. Those keys are skipped.
	shops, items, locs := make([]int64, len(locked)), make([]int64, len(locked)), make([]int64, len(locked))
	for i, k := range locked {
		shops[i], items[i], locs[i] = k.ShopID, k.ItemID, k.LocationID
	}
	rows, err = tx.Query(ctx, c.q(ctx, route, "counters_trylock"), shops, items, locs)
	if err != nil {
		return err
	}
	idx, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return err
	}
	free := make([]holdfast.Key, len(idx))
	gotFree := make(map[int]bool, len(idx))
	for i, n := range idx {
		free[i] = locked[n-1]
		gotFree[n-1] = true
	}
	for i, k := range locked {
		if !gotFree[i] {
			skipped = append(skipped, k)
		}
	}
	if len(free) == 0 {
		return nil
	}
	_, err = c.refill(ctx, tx, route, free)
	return err
}

// queueKeys queues keys for the replenisher.
func (c *Client) queueKeys(ctx context.Context, tx pgx.Tx, route string, keys []holdfast.Key) error {
	shops, items, locs := make([]int64, len(keys)), make([]int64, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		shops[i], items[i], locs[i] = k.ShopID, k.ItemID, k.LocationID
	}
	_, err := tx.Exec(ctx, c.q(ctx, route, "queue_keys"), shops, items, locs)
	return err
}

func (c *Client) extendOnce(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	h := &holdfast.Hold{CheckoutID: checkout, ShopID: shop, Status: holdfast.StatusHeld, Claimable: true}
	var raw []byte
	err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteExtend, "extend_hold"), checkout, shop, ttl.Microseconds(), c.now()).
		Scan(&raw, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &h.Revision)
	if errors.Is(err, pgx.ErrNoRows) {
		var status string
		var fits bool
		err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteExtend, "extend_check"), checkout, shop, ttl.Microseconds(), c.now()).Scan(&status, &fits)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
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
		if fits {
			// Held and within its deadline, yet not updated: the hold's
			// reservation committed after the UPDATE's snapshot.
			return nil, errRetry
		}
		return nil, holdfast.ErrLifetimeExceeded
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &h.Lines); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteExtend, "extend_lines"), checkout, h.ExpiresAt, shop); err != nil {
		return nil, err
	}
	return h, nil
}

func (c *Client) getHold(ctx context.Context, q pgx.Tx, route string, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	return c.readHold(ctx, q, route, "hold_get", shop, checkout)
}

// lockHold is getHold with the row locked (FOR UPDATE): it waits for
// whoever is deciding the hold and sees what they decided.
func (c *Client) lockHold(ctx context.Context, q pgx.Tx, route string, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	return c.readHold(ctx, q, route, "hold_lock", shop, checkout)
}

func (c *Client) readHold(ctx context.Context, q pgx.Tx, route, stmt string, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	h := &holdfast.Hold{CheckoutID: checkout, ShopID: shop}
	var raw []byte
	var status string
	var lapsed bool
	var released []byte
	err := q.QueryRow(ctx, c.q(ctx, route, stmt), checkout, shop, c.now()).
		Scan(&status, &raw, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &h.EndedAt, &lapsed, &h.Revision, &released)
	if errors.Is(err, pgx.ErrNoRows) {
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
	if err := json.Unmarshal(raw, &h.Lines); err != nil {
		return nil, err
	}
	h.MergedInto = engine.MergedInto(raw) // merge.go
	if err := unmarshalReleased(released, h); err != nil {
		return nil, err
	}
	return h, nil
}

// endHold moves a hold from one status to another; nil when it was not in
// the expected status.
func (c *Client) endHold(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID, from, to holdfast.Status) (*holdfast.Hold, error) {
	h := &holdfast.Hold{CheckoutID: checkout, ShopID: shop}
	var raw []byte
	var ended time.Time
	var status string
	err := tx.QueryRow(ctx, c.q(ctx, route, "end_hold"), checkout, shop, string(from), string(to), c.now()).
		Scan(&status, &raw, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &ended, &h.Revision)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	h.Status = holdfast.Status(status)
	h.EndedAt = &ended
	if err := json.Unmarshal(raw, &h.Lines); err != nil {
		return nil, err
	}
	slices.SortFunc(h.Lines, holdfast.CompareLines)
	return h, nil
}
