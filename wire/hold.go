package wire

import (
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Hold is a hold, or a checkout's outcome, on the wire: the answer of a
// reservation, claim, release, extension, edit and of reading a checkout,
// and each entry of a page of holds.
type Hold struct {
	CheckoutID uuid.UUID `json:"checkout_id"`
	ShopID     int64     `json:"shop_id"`
	Status     string    `json:"status"`
	Lines      []Line    `json:"lines"`
	CreatedAt  Time      `json:"created_at"`
	ExpiresAt  Time      `json:"expires_at"`
	Deadline   Time      `json:"deadline"`
	EndedAt    *Time     `json:"ended_at,omitempty"`
	// Claimable is present (true) only on a hold past its expiry that the
	// sweeper has not processed yet (status expired): a claim still
	// succeeds. A held hold is claimable by its status alone.
	Claimable bool `json:"claimable,omitempty"`
	// Revision is the hold's version: 1 at reservation, +1 per edit;
	// absent from answers of a shadow layer's legacy store (no revisions).
	Revision int64 `json:"revision,omitempty"`
	// Released is what a partial claim gave back.
	Released []Line `json:"released,omitempty"`
	// MergedInto, on a released hold, is the checkout a merge moved its
	// lines into.
	MergedInto *uuid.UUID `json:"merged_into,omitempty"`
}

// Line is one line of a hold on the wire: a key and its quantity.
type Line struct {
	ItemID     int64 `json:"item_id"`
	LocationID int64 `json:"location_id"`
	Quantity   int   `json:"quantity"`
	// Preordered is how many of Quantity are pre-ordered (beyond the
	// key's stock), expected in stock at ExpectedAt (holdfast preorder.go).
	Preordered int   `json:"preordered,omitempty"`
	ExpectedAt *Time `json:"expected_at,omitempty"`
}

// fromLine is l on the wire.
func fromLine(l holdfast.Line) Line {
	out := Line{ItemID: l.ItemID, LocationID: l.LocationID, Quantity: l.Quantity, Preordered: l.Preordered}
	if l.ExpectedAt != nil {
		out.ExpectedAt = &Time{l.ExpectedAt.UTC()}
	}
	return out
}

// FromHold is h on the wire: times in UTC, Claimable only on a lapsed
// (expired, unswept) hold, Lines never null.
func FromHold(h *holdfast.Hold) Hold {
	out := Hold{
		CheckoutID: h.CheckoutID, ShopID: h.ShopID, Status: string(h.Status), Lines: make([]Line, len(h.Lines)),
		CreatedAt: Time{h.CreatedAt.UTC()}, ExpiresAt: Time{h.ExpiresAt.UTC()}, Deadline: Time{h.Deadline.UTC()},
		Claimable: h.Claimable && h.Status == holdfast.StatusExpired,
	}
	for i, l := range h.Lines {
		out.Lines[i] = fromLine(l)
	}
	out.Revision = h.Revision
	for _, l := range h.Released {
		out.Released = append(out.Released, fromLine(l))
	}
	if h.EndedAt != nil {
		out.EndedAt = &Time{h.EndedAt.UTC()}
	}
	out.MergedInto = h.MergedInto
	return out
}

// Hold is the holdfast.Hold h carries. Claimable reads as the library
// means it: a held hold, or a lapsed one the wire marks claimable.
// Replayed is not on the wire (the status code says it).
func (h *Hold) Hold() *holdfast.Hold {
	var ended *time.Time
	if h.EndedAt != nil {
		t := h.EndedAt.Time
		ended = &t
	}
	return &holdfast.Hold{
		CheckoutID: h.CheckoutID, ShopID: h.ShopID, Status: holdfast.Status(h.Status), Lines: toLines(h.Lines),
		CreatedAt: h.CreatedAt.Time, ExpiresAt: h.ExpiresAt.Time, Deadline: h.Deadline.Time, EndedAt: ended,
		Claimable: holdfast.Status(h.Status) == holdfast.StatusHeld || h.Claimable,
		Revision:  h.Revision, Released: toLines(h.Released), MergedInto: h.MergedInto,
	}
}

// toLines keeps nil nil: an absent member reads as no lines.
func toLines(ls []Line) []holdfast.Line {
	if ls == nil {
		return nil
	}
	out := make([]holdfast.Line, len(ls))
	for i, l := range ls {
		out[i] = holdfast.Line{ItemID: l.ItemID, LocationID: l.LocationID, Quantity: l.Quantity, Preordered: l.Preordered}
		if l.ExpectedAt != nil {
			t := l.ExpectedAt.Time
			out[i].ExpectedAt = &t
		}
	}
	return out
}
