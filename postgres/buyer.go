package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/engine/driver"
	"github.com/jackc/pgx/v5"
	"hash/fnv"
	"time"
)

// buyerSecretAttempt reads the buyer secret, storing fresh when there is
// none, in one statement (driver.Buyers.BuyerSecretAttempt): no row when an
// insert lost a race to another engine (its snapshot does not see the
// winner's row).
func (c *Client) buyerSecretAttempt(ctx context.Context, tx pgx.Tx, fresh []byte) ([]byte, error) {
	var got []byte
	err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReserve, "secret_get"), "buyer", fresh).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return got, err
}

// sameBuyer refuses a retry of a checkout whose hold was made for another
// buyer (engine.SameBuyer). Only a replay pays its round trip.
func (c *Client) sameBuyer(ctx context.Context, tx pgx.Tx, req *reservation) error {
	hash, err := c.buyerOf(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout)
	if err != nil {
		return err
	}
	return engine.SameBuyer(hash, req.BuyerHash)
}

// buyerOf reads the buyer hash of a checkout's hold (driver.Buyers.BuyerOf).
func (c *Client) buyerOf(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID) ([]byte, error) {
	var hash []byte
	err := tx.QueryRow(ctx, c.q(ctx, route, "buyer_of"), shop, checkout).Scan(&hash)
	return hash, err
}

// buyerLockKey is the advisory lock of one buyer's reservations of one item,
// in the two-int advisory lock space (disjoint from the keys' bigint locks).
func buyerLockKey(shop, item int64, hash []byte) (int32, int32) {
	h := fnv.New64a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(shop))
	binary.BigEndian.PutUint64(b[8:], uint64(item))
	h.Write(b[:])
	h.Write(hash)
	v := h.Sum64()
	return int32(v >> 32), int32(v)
}

// checkBuyer tags the reservation's hold row (already inserted, locked by
// this transaction) with the buyer's hash and enforces the buyer limits of
// its items, in one round trip: it takes each item's (shop, item, buyer)
// advisory lock in item order — after the hold row, before any key lock
// (the lock order) — so one buyer's reservations of an item run this check
// one at a time, then reads each limited item's limit and what the buyer
// has, in a statement that starts after the locks.
func (c *Client) checkBuyer(ctx context.Context, tx pgx.Tx, req *reservation) error {
	return c.enforceBuyer(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout, req.Lines, req.BuyerHash, true)
}

// checkBuyerLate enforces the buyer limits on a late claim, which takes a
// swept hold's units afresh: like a new reservation, it must not take the
// buyer past a limit (the hold's units were given back to the buyer's
// allowance when it expired). tx holds the hold's row (the lock order).
func (c *Client) checkBuyerLate(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	hash, err := c.buyerOf(ctx, tx, holdfast.RouteClaim, shop, checkout)
	if err != nil || hash == nil {
		return err
	}
	return c.enforceBuyer(ctx, tx, holdfast.RouteClaim, shop, checkout, lines, hash, false)
}

// enforceBuyer is checkBuyer's work for a known hash; tag records it on the
// hold.
func (c *Client) enforceBuyer(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line, hash []byte, tag bool) error {
	items, qtys := holdfast.BuyerItemQuantities(lines)
	b := &pgx.Batch{}
	if tag {
		b.Queue(c.q(ctx, route, "buyer_tag"), shop, checkout, hash)
	}
	// A caller's REPEATABLE READ transaction (ReserveTx) would count from
	// its old snapshot: refused below when a limit applies.
	b.Queue("SELECT current_setting('transaction_isolation')")
	for _, item := range items {
		k1, k2 := buyerLockKey(shop, item, hash)
		b.Queue(c.q(ctx, route, "buyer_lock"), k1, k2)
	}
	b.Queue(c.q(ctx, route, "buyer_count"), shop, hash, checkout, items, c.now())
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	if tag {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	var iso string
	if err := br.QueryRow().Scan(&iso); err != nil {
		return err
	}
	for range items {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	counts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.BuyerCount, error) {
		var n driver.BuyerCount
		err := r.Scan(&n.ItemID, &n.Limit, &n.Held)
		return n, err
	})
	if err != nil {
		return err
	}
	if len(counts) > 0 && iso != "read committed" {
		return holdfast.NewArgumentError("tx", "a reservation with a buyer id on a limited item needs a READ COMMITTED transaction (this one is %s)", iso)
	}
	if over := engine.OverBuyerLimits(counts, items, qtys); over != nil {
		return over
	}
	return nil
}

// putBuyerLimit sets an item's per-buyer limit (driver.Settings).
func (c *Client) putBuyerLimit(ctx context.Context, tx pgx.Tx, l holdfast.BuyerLimit) error {
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "buyer_limit_set"), l.ShopID, l.ItemID, l.Limit, l.Window.Microseconds())
	return err
}

// getBuyerLimit reads an item's per-buyer limit (driver.Settings).
func (c *Client) getBuyerLimit(ctx context.Context, tx pgx.Tx, shopID, itemID int64) (*holdfast.BuyerLimit, error) {
	l := &holdfast.BuyerLimit{ShopID: shopID, ItemID: itemID}
	var us int64
	err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteRead, "buyer_limit_get"), shopID, itemID).Scan(&l.Limit, &us)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: item %d has no buyer limit", holdfast.ErrNotFound, itemID)
	}
	if err != nil {
		return nil, err
	}
	l.Window = time.Duration(us) * time.Microsecond
	return l, nil
}

// deleteBuyerLimit removes an item's per-buyer limit (driver.Settings).
func (c *Client) deleteBuyerLimit(ctx context.Context, tx pgx.Tx, shopID, itemID int64) error {
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "buyer_limit_delete"), shopID, itemID)
	return err
}
