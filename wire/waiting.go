package wire

import (
	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Waiting is the answer for a checkout in a waitlist: 202 from a
// reservation that asked to wait (wait_seconds) and from reading the
// checkout while it waits.
type Waiting struct {
	CheckoutID uuid.UUID   `json:"checkout_id"`
	ShopID     int64       `json:"shop_id"`
	Status     string      `json:"status"` // always "waiting"
	Position   int         `json:"position"`
	WaitUntil  Time        `json:"wait_until"`
	Lines      []Shortfall `json:"lines"`
}

// FromWaitlisted is the shop's checkout id waiting as e says, on the wire
// (Lines never null).
func FromWaitlisted(shop int64, id uuid.UUID, e *holdfast.WaitlistedError) Waiting {
	out := Waiting{CheckoutID: id, ShopID: shop, Status: "waiting", Position: e.Position, WaitUntil: Time{e.WaitUntil.UTC()}, Lines: []Shortfall{}}
	for _, l := range e.Lines {
		out.Lines = append(out.Lines, Shortfall(l))
	}
	return out
}

// Waitlisted is the *holdfast.WaitlistedError w carries.
func (w *Waiting) Waitlisted() *holdfast.WaitlistedError {
	return &holdfast.WaitlistedError{Position: w.Position, WaitUntil: w.WaitUntil.Time, Lines: Shortfalls(w.Lines)}
}
