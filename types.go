package holdfast

import (
	"cmp"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Key identifies one stock-keeping position: an inventory item at a location
// of a shop. Every count holdfast keeps is per key.
type Key struct {
	ShopID     int64 `json:"shop_id"`
	ItemID     int64 `json:"item_id"`
	LocationID int64 `json:"location_id"`
}

// Compare orders keys by shop, item, then location: the order every path
// that locks several keys' rows locks them in (docs/DESIGN.md, lock order).
func (k Key) Compare(o Key) int {
	return cmp.Or(cmp.Compare(k.ShopID, o.ShopID), cmp.Compare(k.ItemID, o.ItemID), cmp.Compare(k.LocationID, o.LocationID))
}

// Line is one line of a cart: a quantity of an item at a location.
type Line struct {
	ItemID     int64 `json:"item_id"`
	LocationID int64 `json:"location_id"`
	Quantity   int   `json:"quantity"`
	// Candidates, on a line with LocationID 0, are the locations the engine
	// may allocate it from, in priority order (at most
	// CandidatesPerLineMax); empty means the shop's default order
	// (Engine.SetLocationOrder). Only on allocated lines; see allocate.go.
	Candidates Locations `json:"candidates,omitzero"`
	// Split, on a line with LocationID 0, lets the engine split it across
	// candidates when no single one can supply it.
	Split bool `json:"split,omitempty"`
	// Preordered, in an answer, is how many of the line's units are
	// pre-ordered (beyond the key's stock; preorder.go), and ExpectedAt
	// when the key expects them. Ignored on input.
	Preordered int        `json:"preordered,omitempty"`
	ExpectedAt *time.Time `json:"expected_at,omitempty"`
}

// Status is where a hold is in its lifecycle: held, then exactly one of
// claimed, released or expired. A hold past its expiry that the sweeper has
// not taken yet reads as expired with Hold.Claimable set.
type Status string

const (
	StatusHeld     Status = "held"
	StatusClaimed  Status = "claimed"
	StatusReleased Status = "released"
	StatusExpired  Status = "expired"
)

// Hold is a checkout's reservation, or its outcome once it has ended.
type Hold struct {
	CheckoutID uuid.UUID `json:"checkout_id"`
	ShopID     int64     `json:"shop_id"`
	Status     Status    `json:"status"`
	// Lines are in (item, location) order.
	Lines     []Line    `json:"lines"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Deadline is the latest ExpiresAt that Extend can reach.
	Deadline time.Time  `json:"deadline"`
	EndedAt  *time.Time `json:"ended_at,omitempty"`
	// Claimable is true while a Claim of the checkout would succeed without
	// taking stock afresh: the hold is held, or past its expiry (Status
	// expired) but not swept yet, so its units are still its own. False
	// once the hold ended (claimed, released, expired and swept).
	Claimable bool `json:"claimable"`
	// Revision counts the hold's versions: 1 at Reserve, +1 per Edit. An
	// Edit names the revision it makes (Revision + 1).
	Revision int64 `json:"revision"`
	// Released is what a partial claim (ClaimLines) gave back: the held
	// quantities not claimed. Empty for every other hold.
	Released []Line `json:"released,omitempty"`
	// MergedInto, on a released hold, is the checkout MergeCheckouts moved
	// its lines into (its units never went back to stock); nil otherwise.
	MergedInto *uuid.UUID `json:"merged_into,omitempty"`
	// Replayed is true when the call found the outcome it asked for already
	// in place: a retried Reserve of the same lines, a repeated Claim or
	// Release. Callers treat it as success.
	Replayed bool `json:"-"`
}

// ReserveParams describes a reservation. The zero TTL means
// Config.HoldTTLDefault.
type ReserveParams struct {
	ShopID     int64
	CheckoutID uuid.UUID
	Lines      []Line
	TTL        time.Duration
	// Wait, when positive, asks to wait up to this long for units to come
	// back if the cart is short while its short keys have outstanding
	// holds: the answer is then a *WaitlistedError, and the cart is held
	// (with TTL) first-come-first-served as units return. Zero is no wait;
	// at most Config.WaitMax.
	Wait time.Duration
	// BuyerID, when not empty, names the buyer (an opaque id the shop
	// chooses, at most BuyerIDMaxLen printable ASCII bytes): the hold counts
	// against the buyer's limits (SetBuyerLimit). Only a keyed hash of it is
	// stored.
	BuyerID string
}

// CombinableShape reports whether p has the shape an engine's combiner
// serves: one line at a fixed location, without a wait (which may need a
// transaction of its own) and without a buyer (whose limits are checked on
// the plain path). Whether it is combined also depends on the key's
// strategy (each engine's Client.Combinable).
func (p ReserveParams) CombinableShape() bool {
	return len(p.Lines) == 1 && p.Wait == 0 && p.BuyerID == "" && !p.Lines[0].Allocated()
}

// Strategy is how a key's sellable units are buffered for reservation.
type Strategy string

const (
	// StrategyCounter keeps a key's sellable units in one counter row taken
	// with a conditional UPDATE. Right for most keys: cheap, no bloat, and a
	// few thousand reservations a second per key.
	StrategyCounter Strategy = "counter"
	// StrategyBatch keeps a key's units in one counter row, like
	// StrategyCounter, and combines the key's concurrent one-line
	// reservations from one process into one transaction per batch, each
	// request still granted or refused on its own. Uncontended it is the
	// counter; contended it is the fastest strategy for Reserve on a hot key.
	StrategyBatch Strategy = "batch"
	// StrategyPool keeps a bounded pool of one row per sellable unit, taken
	// with FOR UPDATE SKIP LOCKED (one row per unit: each hold takes whole rows, no counter is contended).
	StrategyPool Strategy = "pool"
	// StrategySlots spreads a key's units over Config.Slots counter rows
	// picked with SKIP LOCKED, so concurrent transactions that hold their
	// reservation open (ReserveTx with work after it) do not queue.
	StrategySlots Strategy = "slots"
)

// Valid reports whether s names a strategy.
func (s Strategy) Valid() bool {
	return slices.Contains(strategies[:], s)
}

// Level is a key's stock as holdfast accounts it.
type Level struct {
	Key
	// Available is the ledger's stock: changed only by claims and adjustments.
	Available int `json:"available"`
	// Held is the units in active holds, expired ones not yet swept included.
	Held int `json:"held"`
	// Pooled is the units in the key's allocation buffer (pool rows or counters).
	Pooled int `json:"pooled"`
	// Sellable is what a new reservation can still get — what a new buyer
	// would be told: Available - Safety - Held, never below zero, and 0
	// while the key has waiters (units go to the waitlist first).
	Sellable int `json:"sellable"`
	// Safety is the key's safety stock: units withheld from sale
	// (SetSafetyStock). 0: none.
	Safety int `json:"safety"`
	// OverCommitted is true when active holds alone exceed Available (after
	// a stock reduction). Nothing is reserved on the key until it is whole.
	OverCommitted bool     `json:"over_committed"`
	Strategy      Strategy `json:"strategy"`
	PoolCap       int      `json:"pool_cap"`
	// Replayed is true when ChangeStock found the same change already
	// applied under its ID and answered the level it answered then.
	Replayed bool `json:"-"`
}

// Shortfall is a line that could not be served, with what was asked and what
// could have been had.
type Shortfall struct {
	ItemID     int64 `json:"item_id"`
	LocationID int64 `json:"location_id"`
	Requested  int   `json:"requested"`
	Sellable   int   `json:"sellable"`
	// NotStocked: the key has never had stock set (its Sellable is 0):
	// likely a mistyped item or location id rather than a sell-out.
	// Reserve and ReserveTx set it on both engines.
	NotStocked bool `json:"not_stocked,omitempty"`
}
