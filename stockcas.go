package holdfast

import (
	"errors"
	"fmt"
)

// ErrStockChanged: a compare-and-set stock change (StockChange.ExpectAvailable,
// StockImportEntry.ExpectAvailable) found the key's available stock other
// than expected, under the key's lock; nothing changed (an import: none of
// its entries). The error is a *StockChangedError with the current value.
// Read the key (or take Current), decide again, and send a new change.
var ErrStockChanged = errors.New("holdfast: stock changed")

// StockChangedError is a compare-and-set stock change refused because the
// key's available stock was Current, not Expected. Index is the entry's
// index in StockImport.Entries for an import, -1 for a single change. It
// matches ErrStockChanged.
//
// An identified single change (StockChange.ID) records the refusal as its
// outcome: a retry with the same ID answers the same error, as it would
// answer the level of a change that was applied. An import records nothing
// when it is refused (it is rolled back whole): a retry with the same ID is
// evaluated afresh — safe, since the refused call applied nothing.
type StockChangedError struct {
	Key      Key
	Expected int
	Current  int
	Index    int
}

func (e *StockChangedError) Error() string {
	at := ""
	if e.Index >= 0 {
		at = fmt.Sprintf("entry %d: ", e.Index)
	}
	return fmt.Sprintf("holdfast: stock changed: %sitem %d at location %d: expected available %d, current %d",
		at, e.Key.ItemID, e.Key.LocationID, e.Expected, e.Current)
}

func (e *StockChangedError) Is(target error) bool { return target == ErrStockChanged }

// StockImportEntriesMax bounds StockImport.Entries: one import is one
// transaction holding every entry's key lock until it commits, and one at
// the maximum must finish inside serve's default request timeout (10 s) on
// a loaded machine: on 2 cores a 1,000-entry import took 2.4 s
// (PostgreSQL) and 5.5–6.6 s (MariaDB) at load 5–7, and up to 25 s on
// PostgreSQL at load 20 before its plans were cached (docs/PERFORMANCE.md).
const StockImportEntriesMax = 500

// StockImport sets many keys' available stock of one shop in one call (a
// sync from an external source of truth): one transaction, all or nothing,
// its keys locked in the driver's lock order. Reason (required) and
// Reference go to every entry's audit trail. ID (required) makes it
// idempotent: a retry with the same ID and entries answers the first
// outcome (Replayed) and applies nothing; the same ID with other entries is
// ErrIdempotencyConflict. An entry with ExpectAvailable is a
// compare-and-set: one mismatch refuses the whole import with a
// *StockChangedError naming the entry. At most StockImportEntriesMax
// entries; one key at most once.
type StockImport struct {
	ShopID    int64
	ID        string
	Reason    string
	Reference string
	Entries   []StockImportEntry
}

// StockImportEntry is one key's new available stock in a StockImport, with
// the available stock it expects to replace (nil: any; 0 matches a key
// never stocked).
type StockImportEntry struct {
	ItemID          int64
	LocationID      int64
	Available       int
	ExpectAvailable *int
}

// StockImportResult is an import's outcome: the levels its keys were left
// at, in the order of its entries.
type StockImportResult struct {
	ID     string
	Levels []Level
	// Replayed is true when the import was already applied under its ID
	// and this is the answer it gave then.
	Replayed bool
}
