package holdfast

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Engine is the contract every holdfast engine offers — the PostgreSQL
// engine in package postgres, the MySQL/MariaDB engine in package mysql, and
// wrappers such as the shadow layer — written against the shared nouns and
// typed errors only. The HTTP service, the bench, the demo and the
// conformance suite (package enginetest) depend on Engine, never on one
// database. Each engine keeps its own …Tx twins typed to its driver
// (pgx.Tx, *sql.Tx): they are not part of the contract because the point
// of them is the caller's own transaction on that database.
//
// Implementations must be safe for concurrent use.
type Engine interface {
	// Reserve holds every line of a cart for a checkout, or nothing.
	Reserve(ctx context.Context, p ReserveParams) (*Hold, error)
	// Claim permanently deducts a held checkout's lines from the ledger.
	Claim(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*Hold, error)
	// Release gives a held checkout's units back.
	Release(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*Hold, error)
	// Extend moves a held checkout's expiry to now + ttl, within its deadline.
	Extend(ctx context.Context, shopID int64, checkoutID uuid.UUID, ttl time.Duration) (*Hold, error)
	// Edit replaces a held checkout's lines atomically, moving only the
	// differences; idempotent on the revision it makes.
	Edit(ctx context.Context, p EditParams) (*Hold, error)
	// ClaimLines claims part of a held checkout and releases the rest.
	ClaimLines(ctx context.Context, shopID int64, checkoutID uuid.UUID, lines []Line) (*Hold, error)
	// Hold reads a checkout's hold or outcome.
	Hold(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*Hold, error)
	// ChangeStock sets or moves a key's available stock.
	ChangeStock(ctx context.Context, ch StockChange) (*Level, error)
	// SetStrategy sets a key's allocation strategy (and pool cap).
	SetStrategy(ctx context.Context, k Key, s Strategy, poolCap int) (*Level, error)
	// Level reads a key's stock as holdfast accounts it.
	Level(ctx context.Context, k Key) (*Level, error)
	// CheckInvariant checks the whole database for the invariant.
	CheckInvariant(ctx context.Context) (*InvariantReport, error)
	// SweepOnce expires every hold past its TTL, in bounded batches, and
	// returns how many it expired.
	SweepOnce(ctx context.Context) (int, error)
	// ServeWaitlist runs one pass of the waitlist server: it ends waits
	// that ran out and holds waiting carts first-come-first-served from
	// units that came back, and returns how many waits it ended.
	ServeWaitlist(ctx context.Context) (int, error)
	// Events reads a shop's event feed: the events with a cursor above
	// after, in cursor order, at most limit of them (events.go).
	Events(ctx context.Context, shopID int64, after int64, limit int) ([]Event, error)
	// Start starts the background maintenance workers; it does not block.
	Start(ctx context.Context)
	// Stop stops them; idempotent, safe before Start, bounded by ctx.
	Stop(ctx context.Context) error
	// Holds lists a page of a shop's holds and outcomes, newest first.
	Holds(ctx context.Context, q HoldQuery) (*HoldPage, error)
	// Ledger lists a page of a key's ledger, newest first.
	Ledger(ctx context.Context, q LedgerQuery) (*LedgerPage, error)
	// Keys lists a shop's keys by activity, with their levels.
	Keys(ctx context.Context, q KeyQuery) ([]Level, error)
	// SetBuyerLimit sets a shop's per-buyer limit of an item (buyer.go).
	SetBuyerLimit(ctx context.Context, l BuyerLimit) error
	// BuyerLimit reads it; ErrNotFound when the item has none.
	BuyerLimit(ctx context.Context, shopID, itemID int64) (*BuyerLimit, error)
	// RemoveBuyerLimit removes it (no error when there is none).
	RemoveBuyerLimit(ctx context.Context, shopID, itemID int64) error
	// SetSafetyStock sets a key's safety stock (safety.go).
	SetSafetyStock(ctx context.Context, k Key, safety int) (*Level, error)
	// SetLocationOrder sets a shop's default location order, the candidates
	// of allocated lines that name none (empty clears it).
	SetLocationOrder(ctx context.Context, shopID int64, locations []int64) error
	// LocationOrder reads a shop's default location order (empty: none).
	LocationOrder(ctx context.Context, shopID int64) ([]int64, error)
	// ImportStock sets many keys' stock of one shop in one transaction,
	// all or nothing, idempotent on the import's ID (stockcas.go).
	ImportStock(ctx context.Context, im StockImport) (*StockImportResult, error)
	// Availability reads what a buyer could reserve now of a list of
	// items, per location in allocation order, from one lock-free read
	// that writes nothing (availability.go).
	Availability(ctx context.Context, q AvailabilityQuery) (*Availability, error)
	// CancelHolds ends a shop's held holds as an admin, by item, buyer or
	// age, with a reason the audit log records (audit.go).
	CancelHolds(ctx context.Context, p CancelParams) (*CancelResult, error)
	// Audit lists a page of a shop's audit log, newest first (audit.go).
	Audit(ctx context.Context, q AuditQuery) (*AuditPage, error)
	// MergeCheckouts moves the held lines of checkout from into checkout
	// into of the same shop, atomically and idempotently; it answers into's
	// hold (merge.go, engine/merge.go).
	MergeCheckouts(ctx context.Context, shopID int64, from, into uuid.UUID) (*Hold, error)
	// SetBundle defines (or redefines) a shop's bundle item: its
	// components × quantities (bundle.go). A definition that is malformed,
	// nested, or names a stocked item as the bundle is an *ArgumentError
	// and changes nothing.
	SetBundle(ctx context.Context, b Bundle) error
	// Bundle reads a shop's bundle definition; ErrNotFound when the item
	// is not a bundle.
	Bundle(ctx context.Context, shopID, itemID int64) (*Bundle, error)
	// DeleteBundle removes a shop's bundle definition (none is no error);
	// holds already made keep their component lines.
	DeleteBundle(ctx context.Context, shopID, itemID int64) error
	// SetDrop sets a key's drop: a lottery window for its reservations,
	// drawn once at the window's end (drop.go, engine/drop.go).
	SetDrop(ctx context.Context, p DropParams) (*Drop, error)
	// Drop reads a key's drop (seed and entrants once drawn); ErrNotFound
	// when it has none.
	Drop(ctx context.Context, k Key) (*Drop, error)
	// SetPreorder sets (cap > 0) or turns off (cap 0) a key's pre-orders:
	// reservations beyond its stock up to the cap, expected at ExpectedAt
	// (preorder.go). A cap below what is outstanding is an *ArgumentError
	// and changes nothing. It answers the setting with its counts.
	SetPreorder(ctx context.Context, p Preorder) (*Preorder, error)
	// Preorder reads a key's pre-order setting and counts (Cap 0: off).
	Preorder(ctx context.Context, k Key) (*Preorder, error)
}

// StockChange is a change of a key's available stock: set it to *Set (a
// stocktake) when Set is non-nil, else move it by Delta (restock,
// shrinkage). Reason (required) and Reference go to the audit trail.
//
// ID, when not empty, makes the change idempotent: a retry with the same
// ID answers the first outcome and applies nothing; the same ID with a
// different change is ErrIdempotencyConflict. Outcomes are kept for
// Config.OutcomeRetention.
//
// ExpectAvailable, when non-nil, makes the change a compare-and-set: it is
// applied only if the key's available stock is *ExpectAvailable when the
// change holds the key's lock; otherwise nothing changes and the answer is
// a *StockChangedError (ErrStockChanged) with the current value. A key
// never stocked has available 0, so expecting 0 matches it (stockcas.go).
type StockChange struct {
	Key
	Set             *int
	Delta           int
	Reason          string
	Reference       string
	ID              string
	ExpectAvailable *int
}
