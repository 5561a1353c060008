package driver

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Preorders is the attempts behind pre-orders (engine/preorder.go,
// holdfast preorder.go). The headroom itself is a companion key's stock,
// moved with Stocker's attempts; these are the setting, the owed lines and
// the reads.
type Preorders[TTx comparable] interface {
	// LockPreorder locks k's pre-order setting row for update and reads
	// it: cap 0 when k has none.
	LockPreorder(ctx context.Context, tx TTx, k holdfast.Key) (cap int, expectedAt time.Time, err error)
	// WritePreorder writes p's setting (cap > 0) or deletes it (cap 0).
	WritePreorder(ctx context.Context, tx TTx, p holdfast.Preorder) error
	// ReadPreorders reads the settings and counts of the keys (shop,
	// items[i], locs[i]) that have a setting, in one statement: on the
	// pool when own, else in the caller's tx.
	ReadPreorders(ctx context.Context, tx TTx, own bool, shop int64, items, locs []int64) ([]holdfast.Preorder, error)
	// LockedLevel takes k's lock (the driver's lock order) and reads its
	// level under it.
	LockedLevel(ctx context.Context, tx TTx, route string, k holdfast.Key) (*holdfast.Level, error)
	// OwePreorders records a checkout's claimed companion lines as owed,
	// in the order of the hold's creation at (oldest first).
	OwePreorders(ctx context.Context, tx TTx, shop int64, checkout uuid.UUID, at time.Time, lines []holdfast.Line) error
	// OwedPreorders locks and reads k's owed lines, oldest first, at most
	// limit (k is the stocked key, not its companion).
	OwedPreorders(ctx context.Context, tx TTx, k holdfast.Key, limit int) ([]Owed, error)
	// ConvertOwed takes units off an owed line (deleting it at 0) and
	// writes its preorder.converted event.
	ConvertOwed(ctx context.Context, tx TTx, o Owed, units int) error
	// OwedKeys reads up to limit keys that have owed lines and sellable
	// stock (the conversion pass), on the pool.
	OwedKeys(ctx context.Context, limit int) ([]holdfast.Key, error)
	// ReadPreorderAccounts reads every key's pre-order accounting from
	// one snapshot (CheckInvariant).
	ReadPreorderAccounts(ctx context.Context) ([]holdfast.PreorderAccount, error)
}

// Owed is one owed pre-order line: a claimed checkout's units of a key
// (the stocked key) that wait for stock.
type Owed struct {
	ID       int64
	Key      holdfast.Key
	Checkout uuid.UUID
	Units    int
}
