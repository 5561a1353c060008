package wire

import (
	"github.com/holdfast/holdfast"
)

// HoldPage is a page of a shop's holds on the wire (GET …/holds).
type HoldPage struct {
	Holds []Hold `json:"holds"`
	Next  string `json:"next,omitempty"`
}

// FromHoldPage is p on the wire.
func FromHoldPage(p *holdfast.HoldPage) HoldPage {
	out := HoldPage{Holds: make([]Hold, len(p.Holds)), Next: p.Next}
	for i := range p.Holds {
		out.Holds[i] = FromHold(&p.Holds[i])
	}
	return out
}

// HoldPage is the holdfast.HoldPage p carries.
func (p *HoldPage) HoldPage() *holdfast.HoldPage {
	out := &holdfast.HoldPage{Holds: make([]holdfast.Hold, len(p.Holds)), Next: p.Next}
	for i := range p.Holds {
		out.Holds[i] = *p.Holds[i].Hold()
	}
	return out
}

// LedgerEntry is one ledger entry on the wire.
type LedgerEntry struct {
	ID             int64  `json:"id"`
	Delta          int    `json:"delta"`
	AvailableAfter int    `json:"available_after"`
	Reason         string `json:"reason"`
	Reference      string `json:"reference,omitempty"`
	CreatedAt      Time   `json:"created_at"`
}

// LedgerPage is a page of a key's ledger on the wire (GET …/ledger).
type LedgerPage struct {
	ShopID     int64         `json:"shop_id"`
	ItemID     int64         `json:"item_id"`
	LocationID int64         `json:"location_id"`
	Entries    []LedgerEntry `json:"entries"`
	Next       string        `json:"next,omitempty"`
}

// FromLedgerPage is p on the wire: times in UTC, Entries never null.
func FromLedgerPage(p *holdfast.LedgerPage) LedgerPage {
	out := LedgerPage{ShopID: p.ShopID, ItemID: p.ItemID, LocationID: p.LocationID, Entries: make([]LedgerEntry, len(p.Entries)), Next: p.Next}
	for i, e := range p.Entries {
		out.Entries[i] = LedgerEntry{ID: e.ID, Delta: e.Delta, AvailableAfter: e.AvailableAfter, Reason: e.Reason, Reference: e.Reference, CreatedAt: Time{e.CreatedAt.UTC()}}
	}
	return out
}

// LedgerPage is the holdfast.LedgerPage p carries.
func (p *LedgerPage) LedgerPage() *holdfast.LedgerPage {
	out := &holdfast.LedgerPage{Key: holdfast.Key{ShopID: p.ShopID, ItemID: p.ItemID, LocationID: p.LocationID},
		Entries: make([]holdfast.LedgerEntry, len(p.Entries)), Next: p.Next}
	for i, e := range p.Entries {
		out.Entries[i] = holdfast.LedgerEntry{ID: e.ID, Delta: e.Delta, AvailableAfter: e.AvailableAfter, Reason: e.Reason, Reference: e.Reference, CreatedAt: e.CreatedAt.Time}
	}
	return out
}

// EventsPage is a page of a shop's event feed on the wire (GET …/events).
type EventsPage struct {
	Events []holdfast.Event `json:"events"`
	// NextAfter is the cursor to ask after next: the last event's, or the
	// after asked when there was none.
	NextAfter int64 `json:"next_after"`
}

// LocationOrder is a shop's default location order on the wire.
type LocationOrder struct {
	ShopID    int64   `json:"shop_id"`
	Locations []int64 `json:"locations"`
}
