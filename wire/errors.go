package wire

import (
	"time"

	"github.com/holdfast/holdfast"
)

// ErrorBody is the wire form of every error answer.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is an error answer's one member.
type Error struct {
	Code      string      `json:"code"`
	Message   string      `json:"message"`
	Field     string      `json:"field,omitempty"`
	Lines     []Shortfall `json:"lines,omitempty"`
	Buyer     *BuyerLimit `json:"buyer_limit,omitempty"`
	RequestID string      `json:"request_id,omitempty"`
	// CurrentRevision is the hold's revision, on revision_conflict.
	CurrentRevision int64 `json:"current_revision,omitempty"`
	// OldestCursor is the oldest feed cursor still available, on
	// cursor_expired (0 is a cursor: hence a pointer).
	OldestCursor *int64 `json:"oldest_cursor,omitempty"`
	// StockChanged is the key's current stock, on stock_changed.
	StockChanged *StockChanged `json:"stock_changed,omitempty"`
}

// Shortfall is a short line on the wire (insufficient_stock, a claim's
// hold_expired, a waiting checkout).
type Shortfall struct {
	ItemID     int64 `json:"item_id"`
	LocationID int64 `json:"location_id"`
	Requested  int   `json:"requested"`
	Sellable   int   `json:"sellable"`
	// NotStocked: the key never had stock set (not_stocked).
	NotStocked bool `json:"not_stocked,omitempty"`
}

// FromShortfalls is ls on the wire; nil stays nil.
func FromShortfalls(ls []holdfast.Shortfall) []Shortfall {
	var out []Shortfall
	for _, l := range ls {
		out = append(out, Shortfall(l))
	}
	return out
}

// Shortfalls is the holdfast.Shortfall lines ls carry; nil stays nil.
func Shortfalls(ls []Shortfall) []holdfast.Shortfall {
	if ls == nil {
		return nil
	}
	out := make([]holdfast.Shortfall, len(ls))
	for i, l := range ls {
		out[i] = holdfast.Shortfall(l)
	}
	return out
}

// BuyerLimit is a per-buyer limit on the wire, and the buyer_limit member
// of a buyer_limit_exceeded error (with held and requested).
type BuyerLimit struct {
	ShopID        int64  `json:"shop_id,omitempty"`
	ItemID        int64  `json:"item_id"`
	Limit         int    `json:"limit"`
	WindowSeconds *int64 `json:"window_seconds,omitempty"`
	Held          *int   `json:"held,omitempty"`
	Requested     *int   `json:"requested,omitempty"`
}

// FromBuyerLimit is l on the wire (its window in whole seconds).
func FromBuyerLimit(l *holdfast.BuyerLimit) BuyerLimit {
	w := int64(l.Window / time.Second)
	return BuyerLimit{ShopID: l.ShopID, ItemID: l.ItemID, Limit: l.Limit, WindowSeconds: &w}
}

// FromBuyerLimitError is e as the buyer_limit member of an error.
func FromBuyerLimitError(e *holdfast.BuyerLimitError) *BuyerLimit {
	return &BuyerLimit{ItemID: e.ItemID, Limit: e.Limit, Held: &e.Held, Requested: &e.Requested}
}

// BuyerLimit is the holdfast.BuyerLimit b carries; an absent window is 0.
func (b *BuyerLimit) BuyerLimit() *holdfast.BuyerLimit {
	return &holdfast.BuyerLimit{ShopID: b.ShopID, ItemID: b.ItemID, Limit: b.Limit, Window: time.Duration(deref(b.WindowSeconds)) * time.Second}
}

// BuyerLimitError is the *holdfast.BuyerLimitError b carries; absent
// members are 0.
func (b *BuyerLimit) BuyerLimitError() *holdfast.BuyerLimitError {
	return &holdfast.BuyerLimitError{ItemID: b.ItemID, Limit: b.Limit, Held: deref(b.Held), Requested: deref(b.Requested)}
}

func deref[T int | int64](p *T) T {
	if p == nil {
		return 0
	}
	return *p
}
