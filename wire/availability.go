package wire

import "github.com/holdfast/holdfast"

// Availability is the answer of GET /v1/shops/{shop_id}/availability: what
// a buyer could reserve now of each item asked, per location in
// allocation order (holdfast.Availability).
type Availability struct {
	ShopID    int64              `json:"shop_id"`
	Locations []int64            `json:"locations"`
	Items     []ItemAvailability `json:"items"`
}

// ItemAvailability is one item of an Availability.
type ItemAvailability struct {
	ItemID     int64                  `json:"item_id"`
	Sellable   int                    `json:"sellable"`
	Whole      int                    `json:"whole"`
	NotStocked bool                   `json:"not_stocked"`
	Locations  []LocationAvailability `json:"locations"`
}

// LocationAvailability is one item at one location.
type LocationAvailability struct {
	LocationID int64 `json:"location_id"`
	Sellable   int   `json:"sellable"`
	Waiters    bool  `json:"waiters"`
	NotStocked bool  `json:"not_stocked"`
	// Preorder is the key's pre-order headroom (absent: none).
	Preorder int `json:"preorder,omitempty"`
}

// FromAvailability is a on the wire.
func FromAvailability(a *holdfast.Availability) Availability {
	out := Availability{ShopID: a.ShopID, Locations: a.Locations, Items: make([]ItemAvailability, len(a.Items))}
	if out.Locations == nil {
		out.Locations = []int64{}
	}
	for i, it := range a.Items {
		w := ItemAvailability{ItemID: it.ItemID, Sellable: it.Sellable, Whole: it.Whole, NotStocked: it.NotStocked,
			Locations: make([]LocationAvailability, len(it.Locations))}
		for j, l := range it.Locations {
			w.Locations[j] = LocationAvailability(l)
		}
		out.Items[i] = w
	}
	return out
}

// Availability is the holdfast.Availability a carries.
func (a *Availability) Availability() *holdfast.Availability {
	out := &holdfast.Availability{ShopID: a.ShopID, Locations: a.Locations, Items: make([]holdfast.ItemAvailability, len(a.Items))}
	for i, it := range a.Items {
		h := holdfast.ItemAvailability{ItemID: it.ItemID, Sellable: it.Sellable, Whole: it.Whole, NotStocked: it.NotStocked,
			Locations: make([]holdfast.LocationAvailability, len(it.Locations))}
		for j, l := range it.Locations {
			h.Locations[j] = holdfast.LocationAvailability(l)
		}
		out.Items[i] = h
	}
	return out
}
