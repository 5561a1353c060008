package holdfast

import (
	"fmt"
	"slices"
)

// AvailabilityItemsMax bounds the items of one availability read
// (Engine.Availability): a query with more is an *ArgumentError naming
// "items". With at most LocationOrderMax locations, one read looks at no
// more than AvailabilityItemsMax × LocationOrderMax keys.
const AvailabilityItemsMax = 100

// AvailabilityQuery asks what a buyer could reserve now of a shop's items
// (Engine.Availability).
type AvailabilityQuery struct {
	ShopID int64
	// Items are the item ids, each once, at most AvailabilityItemsMax.
	Items []int64
	// Locations are the locations to answer for, in allocation priority
	// order, at most LocationOrderMax, each once. Empty: the shop's
	// default location order (SetLocationOrder); a shop without one must
	// name them (an *ArgumentError naming "locations").
	Locations []int64
}

// Validate checks q: a positive shop, 1 to AvailabilityItemsMax distinct
// positive items, at most LocationOrderMax distinct positive locations. A
// rejected query is an *ArgumentError naming the field (shop_id, items,
// items[i], locations, locations[i]). Every engine calls it before reading.
func (q AvailabilityQuery) Validate() error {
	if q.ShopID <= 0 {
		return NewArgumentError("shop_id", "must be a positive integer")
	}
	switch {
	case len(q.Items) == 0:
		return NewArgumentError("items", "name at least one item")
	case len(q.Items) > AvailabilityItemsMax:
		return NewArgumentError("items", "at most %d items, got %d", AvailabilityItemsMax, len(q.Items))
	}
	for j, id := range q.Items {
		if id <= 0 {
			return NewArgumentError(fmt.Sprintf("items[%d]", j), "must be a positive integer")
		}
		if k := slices.Index(q.Items[:j], id); k >= 0 {
			return NewArgumentError(fmt.Sprintf("items[%d]", j), "duplicates items[%d] (item %d)", k, id)
		}
	}
	return validateLocationList("locations", q.Locations, LocationOrderMax)
}

// Availability answers an AvailabilityQuery: what a buyer could reserve
// now, read from one snapshot without locks and without writes. It is a
// read, not a promise: a reservation made after it may find less (others
// reserved meanwhile) or more (holds ended meanwhile).
//
// It answers what any buyer could reserve: a per-buyer limit
// (BuyerLimit) is the buyer's, not the item's, and is not applied; nor is
// Config.QuantityMax, which bounds one line, not what is sellable.
type Availability struct {
	ShopID int64 `json:"shop_id"`
	// Locations are the locations answered, in allocation priority order:
	// the query's, or the shop's default location order.
	Locations []int64 `json:"locations"`
	// Items are the query's items, in the query's order.
	Items []ItemAvailability `json:"items"`
}

// ItemAvailability is what a buyer could reserve now of one item.
//
// A bundle (Bundle) answers here too, from its components: per location
// the fewest whole bundles its components there allow (waiters or not
// stocked when any component is); Sellable and Whole the fewest over its
// components of theirs (each component line is allocated on its own).
// Pre-orders (issue #30 item 2) will add what a line may take beyond
// Sellable up to the pre-order cap; they do not exist yet.
type ItemAvailability struct {
	ItemID int64 `json:"item_id"`
	// Sellable is what one allocated line (location_id 0) that allows a
	// split could reserve now across Locations: the sum of their Sellable.
	Sellable int `json:"sellable"`
	// Whole is what one allocated line without split could reserve now:
	// the largest Sellable of one location (allocation takes the first
	// location, in order, that can supply the whole line).
	Whole int `json:"whole"`
	// NotStocked: the item never had stock set at any of Locations —
	// likely a mistyped id rather than a sell-out.
	NotStocked bool `json:"not_stocked,omitempty"`
	// Locations are the item at each location answered, in order.
	Locations []LocationAvailability `json:"locations"`
}

// LocationAvailability is what a buyer could reserve now of one key: what
// a reservation line at that location could take.
type LocationAvailability struct {
	LocationID int64 `json:"location_id"`
	// Sellable is the key's Level.Sellable: available, less safety stock,
	// less active holds (expired ones not yet swept included), never below
	// zero, and 0 while the key has waiters.
	Sellable int `json:"sellable"`
	// Waiters: the key has a waitlist; units go to its waiters first, so
	// nothing is sellable to a new buyer until they are served.
	Waiters bool `json:"waiters,omitempty"`
	// NotStocked: the key never had stock set (Shortfall.NotStocked).
	NotStocked bool `json:"not_stocked,omitempty"`
	// Preorder is the key's pre-order headroom: what a fixed-location
	// line could pre-order beyond Sellable (SetPreorder; preorder.go).
	Preorder int `json:"preorder,omitempty"`
}
