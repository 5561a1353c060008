package holdfast

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Engine is the contract every holdfast engine offers — the PostgreSQL
// Client in this package, the MySQL/MariaDB engine in package mysql, and
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
	// Start starts the background maintenance workers; it does not block.
	Start(ctx context.Context)
	// Stop stops them; idempotent, safe before Start, bounded by ctx.
	Stop(ctx context.Context) error
	// SetLocationOrder sets a shop's default location order, the candidates
	// of allocated lines that name none (empty clears it).
	SetLocationOrder(ctx context.Context, shopID int64, locations []int64) error
	// LocationOrder reads a shop's default location order (empty: none).
	LocationOrder(ctx context.Context, shopID int64) ([]int64, error)
}

// StockChange is a change of a key's available stock: set it to *Set (a
// stocktake) when Set is non-nil, else move it by Delta (restock,
// shrinkage). Reason (required) and Reference go to the audit trail.
//
// ID, when not empty, makes the change idempotent: a retry with the same
// ID answers the first outcome and applies nothing; the same ID with a
// different change is ErrIdempotencyConflict. Outcomes are kept for
// Config.OutcomeRetention.
type StockChange struct {
	Key
	Set       *int
	Delta     int
	Reason    string
	Reference string
	ID        string
}

var _ Engine = (*Client)(nil)
