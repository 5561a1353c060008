package wire

import (
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Drop is a key's drop on the wire (PUT and GET
// /v1/shops/{shop_id}/inventory/{item_id}/{location_id}/drop): seed and
// entrants are empty until the draw.
type Drop struct {
	ShopID        int64         `json:"shop_id"`
	ItemID        int64         `json:"item_id"`
	LocationID    int64         `json:"location_id"`
	StartsAt      Time          `json:"starts_at"`
	EndsAt        Time          `json:"ends_at"`
	WindowSeconds int64         `json:"window_seconds"`
	State         string        `json:"state"`
	Commitment    string        `json:"commitment"`
	Seed          string        `json:"seed"`
	DrawnAt       *Time         `json:"drawn_at"`
	Entries       int           `json:"entries"`
	Entrants      []DropEntrant `json:"entrants"`
}

// DropEntrant is one entrant of a drawn drop, in lottery order.
type DropEntrant struct {
	Rank       int       `json:"rank"`
	CheckoutID uuid.UUID `json:"checkout_id"`
	Ticket     string    `json:"ticket"`
}

// FromDrop is d on the wire (Entrants never null).
func FromDrop(d *holdfast.Drop) Drop {
	out := Drop{
		ShopID: d.ShopID, ItemID: d.ItemID, LocationID: d.LocationID,
		StartsAt: Time{d.StartsAt.UTC()}, EndsAt: Time{d.EndsAt().UTC()},
		WindowSeconds: int64(d.Window / time.Second), State: string(d.State),
		Commitment: d.Commitment, Seed: d.Seed, Entries: d.Entries, Entrants: []DropEntrant{},
	}
	if !d.DrawnAt.IsZero() {
		out.DrawnAt = &Time{d.DrawnAt.UTC()}
	}
	for _, e := range d.Entrants {
		out.Entrants = append(out.Entrants, DropEntrant(e))
	}
	return out
}

// Drop is the holdfast.Drop w carries.
func (w *Drop) Drop() *holdfast.Drop {
	d := &holdfast.Drop{
		Key:      holdfast.Key{ShopID: w.ShopID, ItemID: w.ItemID, LocationID: w.LocationID},
		StartsAt: w.StartsAt.Time, Window: time.Duration(w.WindowSeconds) * time.Second,
		State: holdfast.DropState(w.State), Commitment: w.Commitment, Seed: w.Seed, Entries: w.Entries,
		Entrants: []holdfast.DropEntrant{},
	}
	if w.DrawnAt != nil {
		d.DrawnAt = w.DrawnAt.Time
	}
	for _, e := range w.Entrants {
		d.Entrants = append(d.Entrants, holdfast.DropEntrant(e))
	}
	return d
}
