package holdfast

import (
	"errors"
	"time"
)

// Pre-orders (issue #30 item 2): a key may accept reservations beyond its
// sellable stock up to a pre-order cap (SetPreorder). A line of a
// reservation whose key is short takes what the key's stock has, and the
// rest from the key's pre-order headroom: the answer marks it pre-ordered
// (Line.Preordered units, Line.ExpectedAt the expected date).
//
// Model. The headroom is the stock of the key's companion key, PreorderKey
// (the same shop and item at the negated location): SetPreorder moves the
// companion's available by the change of the cap, and the pre-ordered part
// of a line is a hold line on the companion. Every lifecycle step of a hold
// therefore applies to pre-ordered units unchanged, with the same locks and
// statements as stock: a release or expiry gives the units back to the
// headroom, a claim deducts them from the companion's available — units
// owed to the buyer (a backorder), recorded per checkout line in
// preorder_owed — and the invariant the engines already check on every key
// (pooled + held <= available) becomes, on the companion,
//
//	pre-ordered held + owed <= cap
//
// because the companion's available is cap - owed at every commit (a cap
// ledger CheckInvariant checks too). With buffered + in-stock held <=
// available on the key itself, nothing more is ever promised than cap +
// available. Users never name a companion key: validation refuses negative
// locations, and the engine shows companion lines as the pre-ordered part
// of their key's line (in holds, listings and the event feed).
//
// Conversion. When stock arrives (a stock set, adjustment or import that
// leaves sellable stock), owed pre-orders of the key are converted oldest
// first in the same transaction, at most PreorderConvertBatch per change:
// each takes the units from the key's available (a stock change with reason
// "preorder") and gives them back to the headroom, and writes a
// preorder.converted event naming the checkout and the units. The
// maintenance worker's conversion pass converts what a bounded call left,
// and what a claim made owed while the key had stock (a claim does not
// convert: it holds level rows, which come after the key's lock in the
// lock order). A held pre-ordered line is not converted: it is converted
// once claimed (a hold can still be released).
//
// Limits. Allocated lines (location 0) never pre-order. A hold with
// pre-ordered lines cannot be edited, partly claimed or merged
// (ErrPreordered): release it and reserve again. A reservation that
// pre-orders goes the plain path (no combining) whatever the key's strategy.
// A cap below what is outstanding (pre-ordered held + owed) is refused.

// PreorderCapMax bounds a key's pre-order cap, in units.
const PreorderCapMax = 1_000_000

// PreorderConvertBatch bounds the owed pre-order lines one stock change (or
// one claim, or one pass of the conversion worker per key) converts.
const PreorderConvertBatch = 100

// PreorderRounds bounds how often one reservation re-splits its lines
// between stock and pre-order headroom when the stock moved under it.
const PreorderRounds = 3

// PreorderReason is the reason of the stock changes a conversion makes.
const PreorderReason = "preorder"

// EventPreorderConverted: an owed pre-order of a checkout received stock.
// CheckoutID, ItemID and LocationID name it, Delta is the units converted,
// Available the units still owed to that checkout line after it.
const EventPreorderConverted EventType = "preorder.converted"

// Preorder is a key's pre-order setting: reservations may pre-order up to
// Cap units beyond the key's stock (held and owed together), expected in
// stock at ExpectedAt. Cap 0 turns pre-orders off.
type Preorder struct {
	Key
	Cap        int       `json:"cap"`
	ExpectedAt time.Time `json:"expected_at"`
	// Held and Owed are the units pre-ordered on the key: in active holds,
	// and claimed but not yet converted. Headroom is what a reservation
	// can still pre-order: Cap - Held - Owed.
	Held     int `json:"held"`
	Owed     int `json:"owed"`
	Headroom int `json:"headroom"`
}

// PreorderKey is the companion key whose stock is k's pre-order headroom:
// the same shop and item at -k.LocationID. It is its own inverse.
func PreorderKey(k Key) Key {
	k.LocationID = -k.LocationID
	return k
}

// IsPreorderKey reports whether k is a companion key (a negative location).
func IsPreorderKey(k Key) bool { return k.LocationID < 0 }

// ValidatePreorder checks a pre-order setting: a key, a cap in
// 0..PreorderCapMax, and an expected date when the cap is positive.
func ValidatePreorder(p Preorder) error {
	if err := ValidateKey(p.Key); err != nil {
		return err
	}
	if p.Cap < 0 || p.Cap > PreorderCapMax {
		return NewArgumentError("cap", "must be between 0 and %d", PreorderCapMax)
	}
	if p.Cap > 0 && p.ExpectedAt.IsZero() {
		return NewArgumentError("expected_at", "required with a positive cap")
	}
	return nil
}

// ErrPreordered: the hold has pre-ordered lines, and the operation (Edit,
// ClaimLines, MergeCheckouts) is not offered on such holds; nothing
// changed. Release the hold and reserve again. HTTP 409 preordered.
var ErrPreordered = errors.New("holdfast: the hold has pre-ordered lines; edit, partial claim and merge are not offered on it")

// PreorderAccount is one key's pre-order accounting as CheckInvariant saw
// it: the cap, the companion's available (cap - owed when the cap ledger
// balances), the units held and owed.
type PreorderAccount struct {
	Key
	Cap       int64 `json:"cap"`
	Available int64 `json:"available"`
	Held      int64 `json:"held"`
	Owed      int64 `json:"owed"`
}

// PreorderBalanced reports whether a key's pre-order accounting holds:
// the companion's available is cap - owed, and held + owed <= cap.
func PreorderBalanced(a PreorderAccount) bool {
	return a.Available+a.Owed == a.Cap && a.Held+a.Owed <= a.Cap
}
