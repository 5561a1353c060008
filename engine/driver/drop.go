package driver

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// DropRow is a key's drop as its locked row holds it (engine/drop.go).
type DropRow struct {
	holdfast.Drop
	// SeedRaw is the secret seed (revealed as Drop.Seed once drawn).
	SeedRaw []byte
	// Now is the database's now (the injected clock when the client has
	// one), read with the row: the one clock the window is judged by.
	Now time.Time
}

// DropEntry is one entrant of a drop as the draw reads it.
type DropEntry struct {
	Checkout uuid.UUID
	Ticket   string          // the buyer hash, hex
	Lines    []holdfast.Line // the cart, sorted
	LinesRaw []byte
	TTL      time.Duration
	Wait     time.Duration // how long it waits once drawn
	Short    []holdfast.Shortfall
	// Waiting: its wait still stands (not cancelled or expired).
	Waiting bool
}

// Dropper is the database side of fair drops (engine/drop.go). Lock
// order: a drop's row before any key lock (the draw takes the entrants'
// key locks after it; a reservation takes no drop row lock).
type Dropper[TTx comparable] interface {
	// PutDrop writes k's drop with a fresh seed (replacing any drop of
	// the key, whose entries go) and empties the key's buffer under its
	// lock: while the drop is open its units are not buffered, so every
	// reservation on it comes back short to the engine.
	PutDrop(ctx context.Context, tx TTx, p holdfast.DropParams, seed []byte) error
	// LockDrop reads k's drop row locked to the end of tx, with its entry
	// count and the database's now; holdfast.ErrNotFound without one.
	LockDrop(ctx context.Context, tx TTx, k holdfast.Key) (*DropRow, error)
	// OpenDrops reads, on the pool outside any transaction (one
	// statement: it runs on every short answer), which of shop's keys
	// (sorted) have an open drop.
	OpenDrops(ctx context.Context, shop int64, keys []holdfast.Key) ([]holdfast.Key, error)
	// EnterDrop records r's checkout as an entrant of k's drop (ticket:
	// r.BuyerHash) and makes it wait, with no queued line, until until:
	// holdfast.ErrDropEntered when the buyer entered under another
	// checkout, ErrRetry when this checkout waits already.
	EnterDrop(ctx context.Context, tx TTx, k holdfast.Key, r *Reservation, short []holdfast.Shortfall, wait time.Duration, until time.Time) error
	// DropEntries reads k's entrants in entry order (at most
	// holdfast.DropEntrantsMax).
	DropEntries(ctx context.Context, tx TTx, k holdfast.Key) ([]DropEntry, error)
	// Unwait removes a checkout's standing wait (the draw enqueues it
	// afresh, in lottery order); false when its wait ended meanwhile.
	Unwait(ctx context.Context, tx TTx, shop int64, checkout uuid.UUID) (bool, error)
	// MarkDrawn ends k's open drop as drawn now, recording each entrant's
	// rank (order: checkouts in lottery order).
	MarkDrawn(ctx context.Context, tx TTx, k holdfast.Key, order []uuid.UUID) error
	// DueDrops reads at most limit keys of open drops whose window ended.
	DueDrops(ctx context.Context, tx TTx, limit int) ([]holdfast.Key, error)
	// ReadDrop reads k's drop as anyone may see it: seed and entrants
	// only once drawn; holdfast.ErrNotFound without one.
	ReadDrop(ctx context.Context, tx TTx, k holdfast.Key) (*holdfast.Drop, error)
}
