package driver

import "context"

// Availabilities is the read behind Engine.Availability (engine/availability.go).
type Availabilities interface {
	// ReadAvailability reads, in one statement — one snapshot, no locks,
	// no writes, outside any transaction of the caller — the account of
	// every key (item, location) of items × locations, where locations
	// empty means the shop's default location order read by the same
	// statement. Rows come item by item in items' order, and within an
	// item in the locations' order. No rows with locations empty: the
	// shop has no default order (or items is empty). The verdict on each
	// row (what is sellable) is the engine's (engine.Sellable).
	ReadAvailability(ctx context.Context, shop int64, items, locations []int64) ([]KeyAvailability, error)
}

// KeyAvailability is one key's account as ReadAvailability reads it.
type KeyAvailability struct {
	ItemID, LocationID int64
	// Free is available less safety stock (0 when the key has no level).
	Free int
	// Held is the units in active holds, expired ones not yet swept
	// included, as a reservation's sellable read counts them.
	Held int
	// Waiters: the key has waiter lines (units go to them first).
	Waiters bool
	// Stocked: the key had stock set once (available > 0, or a ledger
	// entry), as Shortfall.NotStocked says the opposite.
	Stocked bool
	// Preorder is the key's pre-order headroom: what a reservation could
	// still pre-order beyond its stock (0: none, or no cap; preorder.go).
	Preorder int
}
