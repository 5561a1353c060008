package wire

import "github.com/holdfast/holdfast"

// Level is a key's stock on the wire: the answer of reading, setting or
// adjusting it and of setting its safety stock.
type Level struct {
	ShopID        int64  `json:"shop_id"`
	ItemID        int64  `json:"item_id"`
	LocationID    int64  `json:"location_id"`
	Available     int    `json:"available"`
	Held          int    `json:"held"`
	Pooled        int    `json:"pooled"`
	Sellable      int    `json:"sellable"`
	OverCommitted bool   `json:"over_committed"`
	Strategy      string `json:"strategy"`
	Safety        int    `json:"safety"`
}

// FromLevel is l on the wire (its pool cap and Replayed are not).
func FromLevel(l *holdfast.Level) Level {
	return Level{
		ShopID: l.ShopID, ItemID: l.ItemID, LocationID: l.LocationID,
		Available: l.Available, Held: l.Held, Pooled: l.Pooled, Sellable: l.Sellable,
		OverCommitted: l.OverCommitted, Strategy: string(l.Strategy),
		Safety: l.Safety,
	}
}

// Level is the holdfast.Level l carries.
func (l *Level) Level() *holdfast.Level {
	return &holdfast.Level{
		Key:       holdfast.Key{ShopID: l.ShopID, ItemID: l.ItemID, LocationID: l.LocationID},
		Available: l.Available, Held: l.Held, Pooled: l.Pooled, Sellable: l.Sellable,
		OverCommitted: l.OverCommitted, Strategy: holdfast.Strategy(l.Strategy), Safety: l.Safety,
	}
}
