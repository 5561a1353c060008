package holdfast

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Per-buyer limits (issue #16 item 3): a shop caps the units of an item one
// buyer may have in active holds plus claims within a window it chooses
// (a drop's duration, say). A reservation names its buyer with
// ReserveParams.BuyerID, an opaque id the shop chooses; only its keyed hash
// (HMAC-SHA256 under the deployment's secret) is stored.

// BuyerIDMaxLen bounds a buyer id, in bytes. A buyer id is printable ASCII
// (0x21–0x7E): no spaces, no control characters, no other encodings.
const BuyerIDMaxLen = 128

// BuyerSecretMinLen is the shortest Config.BuyerSecret accepted, in bytes.
const BuyerSecretMinLen = 32

// ErrBuyerLimitExceeded: the reservation would take a buyer past a per-buyer
// limit of one of its items; nothing was held. The error is a
// *BuyerLimitError naming the item, the limit and what the buyer already
// holds. Tell the buyer; a release or expiry of their holds (or the window
// passing over their claims) gives the allowance back. Claim returns it too
// for a late claim (the hold expired and was swept, so its units are taken
// afresh) that the buyer's newer holds leave no room for: the hold stays
// expired; refund, or release the newer hold first.
var ErrBuyerLimitExceeded = errors.New("holdfast: buyer limit exceeded")

// BuyerLimit is a per-(shop, item) limit on the units one buyer may have in
// active holds (expired ones not yet swept included: they are still
// claimable) plus claims that ended within Window. Window 0 counts every
// claim still on record (Config.OutcomeRetention). A limit covers the item
// at every location. Limit 0 lets a named buyer reserve none of the item;
// reservations without a buyer id are not limited.
type BuyerLimit struct {
	ShopID int64         `json:"shop_id"`
	ItemID int64         `json:"item_id"`
	Limit  int           `json:"limit"`
	Window time.Duration `json:"-"`
}

// BuyerLimitError is a reservation refused by a per-buyer limit. It matches
// ErrBuyerLimitExceeded.
type BuyerLimitError struct {
	ItemID int64
	// Limit is the item's per-buyer limit.
	Limit int
	// Held is what the buyer already has: units in active holds plus
	// claims within the limit's window (this reservation not included).
	Held int
	// Requested is what this reservation asked for, over all its lines of
	// the item.
	Requested int
}

func (e *BuyerLimitError) Error() string {
	return fmt.Sprintf("holdfast: buyer limit exceeded: item %d: limit %d, buyer already holds %d, requested %d", e.ItemID, e.Limit, e.Held, e.Requested)
}

func (e *BuyerLimitError) Is(target error) bool { return target == ErrBuyerLimitExceeded }

// ValidateBuyerID checks a reservation's buyer id: empty (no buyer), or 1 to
// BuyerIDMaxLen bytes of printable ASCII. Every engine uses it.
func ValidateBuyerID(id string) error {
	if len(id) > BuyerIDMaxLen {
		return NewArgumentError("buyer_id", "at most %d bytes", BuyerIDMaxLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return NewArgumentError("buyer_id", "must be printable ASCII without spaces (byte %d is 0x%02x)", i, id[i])
		}
	}
	return nil
}

// ValidateBuyerLimit checks a BuyerLimit against its bounds: positive shop
// and item, 0 <= Limit <= AvailableMax, 0 <= Window <= retention (claims
// older than the outcome retention are no longer on record, so a longer
// window could not be honoured). Every engine uses it.
func ValidateBuyerLimit(l BuyerLimit, retention time.Duration) error {
	switch {
	case l.ShopID <= 0:
		return NewArgumentError("shop_id", "must be a positive integer")
	case l.ItemID <= 0:
		return NewArgumentError("item_id", "must be a positive integer")
	case l.Limit < 0 || l.Limit > AvailableMax:
		return NewArgumentError("limit", "must be between 0 and %d", AvailableMax)
	case l.Window < 0 || l.Window > retention:
		return NewArgumentError("window", "must be between 0 and the outcome retention (%v)", retention)
	case l.Window%time.Microsecond != 0:
		return NewArgumentError("window", "must be a whole number of microseconds")
	}
	return nil
}

// ValidateBuyerSecret checks Config.BuyerSecret: empty (the engine uses the
// secret stored in its database) or at least BuyerSecretMinLen bytes.
func ValidateBuyerSecret(secret []byte) error {
	if len(secret) > 0 && len(secret) < BuyerSecretMinLen {
		return NewArgumentError("Config.BuyerSecret", "at least %d bytes (or empty: the database's secret)", BuyerSecretMinLen)
	}
	return nil
}

// BuyerHash is the keyed hash a buyer id is stored as: HMAC-SHA256 under
// secret of the shop id and the buyer id, so equal ids of two shops do not
// match and the raw id cannot be recovered without the secret.
func BuyerHash(secret []byte, shopID int64, buyerID string) []byte {
	m := hmac.New(sha256.New, secret)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(shopID))
	m.Write(b[:])
	m.Write([]byte(buyerID))
	return m.Sum(nil)
}

// NewBuyerSecret returns a fresh random secret for the buyer-id HMAC.
func NewBuyerSecret() []byte {
	b := make([]byte, BuyerSecretMinLen)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return b
}

// BuyerItemQuantities sums a cart's lines per item, in item order (lines
// are sorted by item).
func BuyerItemQuantities(lines []Line) (items []int64, qtys []int) {
	for _, l := range lines {
		if n := len(items); n > 0 && items[n-1] == l.ItemID {
			qtys[n-1] += l.Quantity
			continue
		}
		items, qtys = append(items, l.ItemID), append(qtys, l.Quantity)
	}
	return items, qtys
}

// buyerKey caches the deployment's buyer secret once read.
type buyerKey struct {
	mu     sync.Mutex
	secret []byte
}

// buyerSecret returns Config.BuyerSecret, else the secret stored in the
// database (holdfast_secrets, created by the first engine that needs it).
func (c *Client) buyerSecret(ctx context.Context) ([]byte, error) {
	if len(c.cfg.BuyerSecret) > 0 {
		return c.cfg.BuyerSecret, nil
	}
	c.buyer.mu.Lock()
	defer c.buyer.mu.Unlock()
	if c.buyer.secret != nil {
		return c.buyer.secret, nil
	}
	fresh := NewBuyerSecret()
	// Two statements at most: an insert that lost a race to another engine
	// did nothing and, in its snapshot, does not see the winner's row.
	for range 3 {
		var got []byte
		err := c.pool.QueryRow(ctx, c.q(ctx, RouteReserve, "secret_get"), "buyer", fresh).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, c.mapErr(RouteReserve, err, true, true)
		}
		c.buyer.secret = got
		return got, nil
	}
	return nil, fmt.Errorf("%w: the buyer secret could not be read", ErrUnavailable)
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
	secret, err := c.buyerSecret(ctx)
	if err != nil {
		return err
	}
	return c.enforceBuyer(ctx, tx, RouteReserve, req.shop, req.checkout, req.lines, BuyerHash(secret, req.shop, req.buyer), true)
}

// checkBuyerLate enforces the buyer limits on a late claim, which takes a
// swept hold's units afresh: like a new reservation, it must not take the
// buyer past a limit (the hold's units were given back to the buyer's
// allowance when it expired). tx holds the hold's row (the lock order).
func (c *Client) checkBuyerLate(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, lines []Line) error {
	var hash []byte
	if err := tx.QueryRow(ctx, c.q(ctx, RouteClaim, "buyer_of"), shop, checkout).Scan(&hash); err != nil || hash == nil {
		return err
	}
	return c.enforceBuyer(ctx, tx, RouteClaim, shop, checkout, lines, hash, false)
}

// enforceBuyer is checkBuyer's work for a known hash; tag records it on the
// hold.
func (c *Client) enforceBuyer(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID, lines []Line, hash []byte, tag bool) error {
	items, qtys := BuyerItemQuantities(lines)
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
	defer rows.Close()
	for rows.Next() {
		var item int64
		var limit, held int
		if err := rows.Scan(&item, &limit, &held); err != nil {
			return err
		}
		if iso != "read committed" {
			return NewArgumentError("tx", "a reservation with a buyer id on a limited item needs a READ COMMITTED transaction (this one is %s)", iso)
		}
		q := 0
		for i, it := range items {
			if it == item {
				q = qtys[i]
			}
		}
		if held+q > limit {
			return &BuyerLimitError{ItemID: item, Limit: limit, Held: held, Requested: q}
		}
	}
	return rows.Err()
}

// SetBuyerLimit sets (creates or replaces) the per-buyer limit of a shop's
// item. It applies to reservations from then on; holds already made are
// not undone. Safe for concurrent use.
func (c *Client) SetBuyerLimit(ctx context.Context, l BuyerLimit) error {
	if err := ValidateBuyerLimit(l, c.cfg.OutcomeRetention); err != nil {
		return err
	}
	return c.run(ctx, c.pool, RouteAdjust, true, true, func(tx pgx.Tx, _ int) error {
		_, err := tx.Exec(ctx, c.q(ctx, RouteAdjust, "buyer_limit_set"), l.ShopID, l.ItemID, l.Limit, l.Window.Microseconds())
		return err
	})
}

// BuyerLimit reads the per-buyer limit of a shop's item; ErrNotFound when
// it has none.
func (c *Client) BuyerLimit(ctx context.Context, shopID, itemID int64) (*BuyerLimit, error) {
	if err := ValidateBuyerLimit(BuyerLimit{ShopID: shopID, ItemID: itemID}, c.cfg.OutcomeRetention); err != nil {
		return nil, err
	}
	l := &BuyerLimit{ShopID: shopID, ItemID: itemID}
	err := c.run(ctx, c.pool, RouteRead, true, true, func(tx pgx.Tx, _ int) error {
		var us int64
		err := tx.QueryRow(ctx, c.q(ctx, RouteRead, "buyer_limit_get"), shopID, itemID).Scan(&l.Limit, &us)
		l.Window = time.Duration(us) * time.Microsecond
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: item %d has no buyer limit", ErrNotFound, itemID)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// RemoveBuyerLimit removes the per-buyer limit of a shop's item; removing
// one that does not exist is not an error.
func (c *Client) RemoveBuyerLimit(ctx context.Context, shopID, itemID int64) error {
	if err := ValidateBuyerLimit(BuyerLimit{ShopID: shopID, ItemID: itemID}, c.cfg.OutcomeRetention); err != nil {
		return err
	}
	return c.run(ctx, c.pool, RouteAdjust, true, true, func(tx pgx.Tx, _ int) error {
		_, err := tx.Exec(ctx, c.q(ctx, RouteAdjust, "buyer_limit_delete"), shopID, itemID)
		return err
	})
}
