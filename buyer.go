package holdfast

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
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
