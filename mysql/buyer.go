package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// Per-buyer limits (holdfast.BuyerLimit) on MySQL/MariaDB. A reservation
// with a buyer id locks one buyer_locks row per limited item of its cart,
// in item order, before anything else it locks (the lock order: only the
// purge, which skips locked ones, and the waitlist server's grant to a
// waiter with a buyer lock these rows otherwise; the grant does so after
// the keys' lock rows, and a cycle with a reservation of the same buyer on
// the same keys is a deadlock InnoDB reports at once and the retry
// clears), then counts in the next statement — under
// READ COMMITTED a fresh read view, which sees every hold of the buyer that
// committed before the lock — what the buyer has: units in held holds
// (expired but unswept included) plus units claimed within the limit's
// window. A missing lock row is created by the locking statement itself,
// in the transaction and on its connection (buyer_lock.sql): a transaction
// never waits for a second connection from the pool, which a pool of
// exactly the callers' concurrency would never give (issue 24 item 3).
// Rows of buyers with no hold left on record are purged (purgeBuyerLocks).

// buyerSecretAttempt reads the buyer secret, creating it as fresh when
// there is none (driver.Buyers.BuyerSecretAttempt): nil, nil when another
// engine created it concurrently (the engine asks again).
func (c *Client) buyerSecretAttempt(ctx context.Context, tx *sql.Tx, fresh []byte) ([]byte, error) {
	const route = holdfast.RouteReserve
	var got []byte
	err := tx.QueryRowContext(ctx, c.q(ctx, route, "secret_get"), "buyer").Scan(&got)
	if !errors.Is(err, sql.ErrNoRows) {
		return got, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "secret_create"), "buyer", fresh, c.now()); err != nil {
		if isDup(err) {
			return nil, nil
		}
		return nil, err
	}
	return fresh, nil
}

// checkBuyer enforces the buyer limits of a reservation's items and
// returns the buyer's hash, for the hold. Over a limit, a checkout that
// already has a hold or outcome is answered with it (a retry), else it is a
// *holdfast.BuyerLimitError.
func (c *Client) checkBuyer(ctx context.Context, tx *sql.Tx, own bool, req *reservation) ([]byte, *holdfast.Hold, error) {
	hash := req.BuyerHash
	over, err := c.enforceBuyer(ctx, tx, own, holdfast.RouteReserve, req.Shop, req.Checkout, req.Lines, hash)
	if err != nil || over == nil {
		return hash, nil, err
	}
	h, err := c.existing(ctx, tx, req)
	if errors.Is(err, holdfast.ErrNotFound) {
		return nil, nil, over
	}
	return nil, h, err
}

// sameBuyer refuses a retry of a checkout whose hold was made for another
// buyer (engine.SameBuyer). Only a replay pays its round trip.
func (c *Client) sameBuyer(ctx context.Context, tx *sql.Tx, req *reservation) error {
	hash, err := c.buyerOf(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout)
	if err != nil {
		return err
	}
	return engine.SameBuyer(hash, req.BuyerHash)
}

// buyerOf reads the buyer hash of a checkout's hold
// (hfdriver.Buyers.BuyerOf).
func (c *Client) buyerOf(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID) ([]byte, error) {
	var hash []byte
	err := tx.QueryRowContext(ctx, c.q(ctx, route, "buyer_of"), shop, checkout[:], shop, checkout[:]).Scan(&hash)
	return hash, err
}

// checkBuyerLate enforces the buyer limits on a late claim, which takes a
// swept hold's units afresh: like a new reservation, it must not take the
// buyer past a limit (the hold's units went back to the buyer's allowance
// when it expired).
func (c *Client) checkBuyerLate(ctx context.Context, tx *sql.Tx, own bool, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	hash, err := c.buyerOf(ctx, tx, holdfast.RouteClaim, shop, checkout)
	if err != nil || hash == nil {
		return err
	}
	over, err := c.enforceBuyer(ctx, tx, own, holdfast.RouteClaim, shop, checkout, lines, hash)
	if err != nil {
		return err
	}
	if over != nil {
		return over
	}
	return nil
}

// enforceBuyer locks the buyer's rows of the limited items among lines, in
// item order, and returns the first limit the lines would exceed (nil:
// none), counting what the buyer has besides checkout.
func (c *Client) enforceBuyer(ctx context.Context, tx *sql.Tx, own bool, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line, hash []byte) (*holdfast.BuyerLimitError, error) {
	items, qtys := holdfast.BuyerItemQuantities(lines)
	type limit struct {
		item   int64
		limit  int
		window int64
	}
	var lims []limit
	for _, item := range items {
		l := limit{item: item}
		err := tx.QueryRowContext(ctx, c.q(ctx, route, "buyer_limit_get"), shop, item).Scan(&l.limit, &l.window)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		lims = append(lims, l)
	}
	if len(lims) > 0 && !own {
		// The count must see what committed before the lock: a caller's
		// REPEATABLE READ transaction would read its old snapshot.
		if err := c.requireReadCommitted(ctx, tx, route); err != nil {
			return nil, err
		}
	}
	for _, l := range lims {
		// Item order: lims follows items, which follow the sorted lines.
		// Created when missing, locked either way, on tx's connection.
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "buyer_lock"), shop, l.item, hash); err != nil {
			return nil, err
		}
	}
	counts := make([]hfdriver.BuyerCount, 0, len(lims))
	for _, l := range lims {
		n := hfdriver.BuyerCount{ItemID: l.item, Limit: l.limit}
		if err := tx.QueryRowContext(ctx, c.q(ctx, route, "buyer_count"),
			shop, hash, checkout[:], l.item, l.window, c.now(), l.window).Scan(&n.Held); err != nil {
			return nil, err
		}
		counts = append(counts, n)
	}
	return engine.OverBuyerLimits(counts, items, qtys), nil
}

// putBuyerLimit sets an item's per-buyer limit (driver.Settings).
func (c *Client) putBuyerLimit(ctx context.Context, tx *sql.Tx, l holdfast.BuyerLimit) error {
	const route = holdfast.RouteAdjust
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "buyer_limit_update"), l.Limit, l.Window.Microseconds(), c.now(), l.ShopID, l.ItemID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	// 0 rows: new, or unchanged (MySQL counts changed rows); the insert
	// tells them apart.
	_, err = tx.ExecContext(ctx, c.q(ctx, route, "buyer_limit_insert"), l.ShopID, l.ItemID, l.Limit, l.Window.Microseconds(), c.now())
	if isDup(err) {
		return nil // unchanged, or set concurrently: last writer wins either way
	}
	return err
}

// getBuyerLimit reads an item's per-buyer limit (driver.Settings).
func (c *Client) getBuyerLimit(ctx context.Context, tx *sql.Tx, shopID, itemID int64) (*holdfast.BuyerLimit, error) {
	l := &holdfast.BuyerLimit{ShopID: shopID, ItemID: itemID}
	var us int64
	err := tx.QueryRowContext(ctx, c.q(ctx, holdfast.RouteRead, "buyer_limit_get"), shopID, itemID).Scan(&l.Limit, &us)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: item %d has no buyer limit", holdfast.ErrNotFound, itemID)
	}
	if err != nil {
		return nil, err
	}
	l.Window = time.Duration(us) * time.Microsecond
	return l, nil
}

// deleteBuyerLimit removes an item's per-buyer limit (driver.Settings).
func (c *Client) deleteBuyerLimit(ctx context.Context, tx *sql.Tx, shopID, itemID int64) error {
	_, err := tx.ExecContext(ctx, c.q(ctx, holdfast.RouteAdjust, "buyer_limit_delete"), shopID, itemID)
	return err
}
