package holdfast

import (
	"github.com/google/uuid"

	"fmt"
	"slices"
)

// ValidateLines checks a cart's lines against cfg's bounds (at least one
// line, at most LinesPerCartMax, positive ids, quantities 1..QuantityMax, no
// two lines for one key) and returns them sorted in (item, location) order,
// the one lock order of every engine. A rejected cart is an *ArgumentError
// naming the offending line. Every engine validates carts with it. A line
// with LocationID 0 is allocated by the engine (Line.Candidates, Split;
// allocate.go), and its item may appear on no other line.
func ValidateLines(cfg Config, in []Line) ([]Line, error) {
	cfg = cfg.WithDefaults()
	if len(in) == 0 {
		return nil, NewArgumentError("lines", "a cart needs at least one line")
	}
	if len(in) > cfg.LinesPerCartMax {
		return nil, NewArgumentError("lines", "at most %d lines per cart, got %d", cfg.LinesPerCartMax, len(in))
	}
	for i, l := range in {
		if err := validateAllocationLine(i, l); err != nil {
			return nil, err
		}
		switch {
		case l.ItemID <= 0:
			return nil, NewArgumentError(fmt.Sprintf("lines[%d].item_id", i), "must be a positive integer")
		case l.LocationID < 0:
			return nil, NewArgumentError(fmt.Sprintf("lines[%d].location_id", i), "must be a positive integer, or 0 to allocate from candidates")
		case l.Quantity <= 0:
			return nil, NewArgumentError(fmt.Sprintf("lines[%d].quantity", i), "must be at least 1")
		case l.Quantity > cfg.QuantityMax:
			return nil, NewArgumentError(fmt.Sprintf("lines[%d].quantity", i), "must be at most %d", cfg.QuantityMax)
		}
	}
	if err := checkAllocatedItems(in); err != nil {
		return nil, err
	}
	lines := slices.Clone(in)
	for i := range lines {
		lines[i].Preordered, lines[i].ExpectedAt = 0, nil // answer-only (preorder.go)
	}
	slices.SortFunc(lines, CompareLines)
	for i := 1; i < len(lines); i++ {
		if lines[i].ItemID == lines[i-1].ItemID && lines[i].LocationID == lines[i-1].LocationID {
			j := slices.IndexFunc(in, func(l Line) bool { return l.ItemID == lines[i].ItemID && l.LocationID == lines[i].LocationID })
			k := j + 1 + slices.IndexFunc(in[j+1:], func(l Line) bool { return l.ItemID == lines[i].ItemID && l.LocationID == lines[i].LocationID })
			return nil, NewArgumentError(fmt.Sprintf("lines[%d]", k), "duplicates lines[%d] (item %d at location %d); merge them", j, lines[i].ItemID, lines[i].LocationID)
		}
	}
	return lines, nil
}

// CompareLines orders lines by key: item, then location.
func CompareLines(a, b Line) int {
	if a.ItemID != b.ItemID {
		if a.ItemID < b.ItemID {
			return -1
		}
		return 1
	}
	if a.LocationID != b.LocationID {
		if a.LocationID < b.LocationID {
			return -1
		}
		return 1
	}
	return 0
}

// ValidateCheckout checks a checkout's shop and id.
func ValidateCheckout(shop int64, checkout uuid.UUID) error {
	if shop <= 0 {
		return NewArgumentError("shop_id", "must be a positive integer")
	}
	if checkout == uuid.Nil {
		return NewArgumentError("checkout_id", "must be a non-nil UUID")
	}
	return nil
}
