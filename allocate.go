package holdfast

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
)

// CandidatesPerLineMax bounds the candidate locations of one allocated line
// (Line.Candidates).
const CandidatesPerLineMax = 8

// LocationOrderMax bounds a shop's default location order
// (Engine.SetLocationOrder).
const LocationOrderMax = 16

// RouteLocationOrder names the shop default location order's operations in
// metrics and SQL comments.
const RouteLocationOrder = "location_order"

// Locations is a list of location ids in priority order: the candidates of
// an allocated line (Line.Candidates). It is a comparable value (so Line
// stays comparable with == and slices.Equal, as engines and the shadow layer
// compare carts) and reads and writes JSON as an array of ids. The zero
// value is the empty list. Build one with LocationsOf; read it with IDs.
type Locations struct{ ids string }

// LocationsOf returns ids as a Locations, in the order given.
func LocationsOf(ids ...int64) Locations {
	b := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return Locations{ids: string(b)}
}

// IDs returns the ids in priority order (nil when empty).
func (l Locations) IDs() []int64 {
	if len(l.ids) == 0 {
		return nil
	}
	out := make([]int64, len(l.ids)/8)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64([]byte(l.ids[8*i : 8*i+8])))
	}
	return out
}

// Len is the number of ids.
func (l Locations) Len() int { return len(l.ids) / 8 }

// IsZero reports whether the list is empty (for json's omitzero).
func (l Locations) IsZero() bool { return l.ids == "" }

// MarshalJSON writes the ids as a JSON array.
func (l Locations) MarshalJSON() ([]byte, error) {
	ids := l.IDs()
	if ids == nil {
		ids = []int64{}
	}
	return json.Marshal(ids)
}

// UnmarshalJSON reads a JSON array of ids (null is the empty list).
func (l *Locations) UnmarshalJSON(b []byte) error {
	var ids []int64
	if err := json.Unmarshal(b, &ids); err != nil {
		return err
	}
	*l = LocationsOf(ids...)
	return nil
}

// Allocated reports whether l asks the engine to choose its location
// (LocationID 0).
func (l Line) Allocated() bool { return l.LocationID == 0 }

// HasAllocation reports whether any line of a cart is allocated.
func HasAllocation(lines []Line) bool {
	return slices.ContainsFunc(lines, Line.Allocated)
}

// validateAllocationLine checks the allocation members of input line i.
func validateAllocationLine(i int, l Line) error {
	if l.LocationID != 0 {
		switch {
		case l.Candidates.Len() > 0:
			return NewArgumentError(fmt.Sprintf("lines[%d].candidates", i), "only with location_id 0 (allocation); a line with a location takes from that location")
		case l.Split:
			return NewArgumentError(fmt.Sprintf("lines[%d].split", i), "only with location_id 0 (allocation)")
		}
		return nil
	}
	return validateLocationList(fmt.Sprintf("lines[%d].candidates", i), l.Candidates.IDs(), CandidatesPerLineMax)
}

// validateLocationList checks a priority list of locations: at most max,
// positive ids, no duplicates.
func validateLocationList(field string, ids []int64, max int) error {
	if len(ids) > max {
		return NewArgumentError(field, "at most %d locations, got %d", max, len(ids))
	}
	for j, id := range ids {
		if id <= 0 {
			return NewArgumentError(fmt.Sprintf("%s[%d]", field, j), "must be a positive integer")
		}
		if k := slices.Index(ids[:j], id); k >= 0 {
			return NewArgumentError(fmt.Sprintf("%s[%d]", field, j), "duplicates %s[%d] (location %d)", field, k, id)
		}
	}
	return nil
}

// checkAllocatedItems rejects a cart where an allocated item appears on
// another line: an allocated item takes exactly one line, so the hold's
// lines for it are its allocation and nothing else.
func checkAllocatedItems(in []Line) error {
	for j, l := range in {
		if !l.Allocated() {
			continue
		}
		for k, o := range in {
			if k != j && o.ItemID == l.ItemID {
				return NewArgumentError(fmt.Sprintf("lines[%d]", max(j, k)), "item %d is allocated by lines[%d]; an allocated item takes exactly one line", l.ItemID, j)
			}
		}
	}
	return nil
}

// ValidateLocationOrder checks a shop's default location order (at most
// LocationOrderMax positive, distinct ids; empty clears the order). Every
// engine validates SetLocationOrder with it.
func ValidateLocationOrder(shopID int64, locations []int64) error {
	if shopID <= 0 {
		return NewArgumentError("shop_id", "must be a positive integer")
	}
	return validateLocationList("locations", locations, LocationOrderMax)
}

// NeedsLocationOrder reports whether a cart has an allocated line without
// candidates, which allocates in the shop's default order.
func NeedsLocationOrder(lines []Line) bool {
	return slices.ContainsFunc(lines, func(l Line) bool { return l.Allocated() && l.Candidates.Len() == 0 })
}

// ExpandAllocation returns lines (validated, sorted) with every allocated
// line's empty Candidates replaced by the shop's default order. An allocated
// line with no candidates in a shop without an order is an *ArgumentError
// naming its location_id in input (the lines as the caller gave them).
func ExpandAllocation(lines, input []Line, order []int64) ([]Line, error) {
	out := slices.Clone(lines)
	for i, l := range out {
		if l.Allocated() && l.Candidates.Len() == 0 {
			if len(order) == 0 {
				j := slices.IndexFunc(input, func(o Line) bool { return o.Allocated() && o.ItemID == l.ItemID })
				return nil, NewArgumentError(fmt.Sprintf("lines[%d].location_id", j), "0 allocates from candidates or the shop's default location order, and the line has no candidates and the shop no order (set one, or send candidates)")
			}
			out[i].Candidates = LocationsOf(order...)
		}
	}
	return out, nil
}

// AllocationKeys returns every key an allocation may touch — each fixed
// line's and each candidate of each allocated line — once each, in
// (item, location) order, the one lock order of every engine. Quantities
// are zero.
func AllocationKeys(lines []Line) []Line {
	var keys []Line
	for _, l := range lines {
		if !l.Allocated() {
			keys = append(keys, Line{ItemID: l.ItemID, LocationID: l.LocationID})
			continue
		}
		for _, loc := range l.Candidates.IDs() {
			keys = append(keys, Line{ItemID: l.ItemID, LocationID: loc})
		}
	}
	slices.SortFunc(keys, CompareLines)
	return slices.Compact(keys)
}

// ResolveAllocation chooses the locations of a cart's allocated lines
// (expanded: every allocated line has candidates) from sellable, the
// sellable units of each of AllocationKeys(lines), in that order: the first
// candidate that can supply the whole line, or — when the line allows a
// split — units from the candidates in priority order. It returns the
// resolved cart (fixed lines as they are, one line per chosen location), in
// (item, location) order, or the shortfalls: an allocated line that no
// candidate (or combination) can supply is named by item with location 0
// and the total sellable across its candidates; a fixed line is named as
// usual.
func ResolveAllocation(lines []Line, keys []Line, sellable []int) ([]Line, []Shortfall) {
	at := func(item, loc int64) int {
		i, ok := slices.BinarySearchFunc(keys, Line{ItemID: item, LocationID: loc}, CompareLines)
		if !ok {
			return 0
		}
		return sellable[i]
	}
	var out []Line
	var short []Shortfall
	for _, l := range lines {
		if !l.Allocated() {
			if s := at(l.ItemID, l.LocationID); s < l.Quantity {
				short = append(short, Shortfall{ItemID: l.ItemID, LocationID: l.LocationID, Requested: l.Quantity, Sellable: s})
			}
			out = append(out, l)
			continue
		}
		cands := l.Candidates.IDs()
		total := 0
		for _, loc := range cands {
			total += at(l.ItemID, loc)
		}
		if total < l.Quantity {
			short = append(short, Shortfall{ItemID: l.ItemID, Requested: l.Quantity, Sellable: total})
			continue
		}
		whole := slices.IndexFunc(cands, func(loc int64) bool { return at(l.ItemID, loc) >= l.Quantity })
		switch {
		case whole >= 0:
			out = append(out, Line{ItemID: l.ItemID, LocationID: cands[whole], Quantity: l.Quantity})
		case l.Split:
			left := l.Quantity
			for _, loc := range cands {
				if n := min(left, at(l.ItemID, loc)); n > 0 {
					out = append(out, Line{ItemID: l.ItemID, LocationID: loc, Quantity: n})
					left -= n
				}
				if left == 0 {
					break
				}
			}
		default:
			best := 0
			for _, loc := range cands {
				best = max(best, at(l.ItemID, loc))
			}
			// Enough in total but at no single location, and no split:
			// the line is short; the answer names the best location's
			// stock, what an unsplit line could have had.
			short = append(short, Shortfall{ItemID: l.ItemID, Requested: l.Quantity, Sellable: best})
		}
	}
	if len(short) > 0 {
		return nil, short
	}
	slices.SortFunc(out, CompareLines)
	return out, nil
}

// AllocationSatisfied reports whether a hold's lines (held) answer the
// requested cart: every fixed line is held as asked, and every allocated
// line is held in full at locations among its candidates (any location
// when it named none: the shop's order may have changed since), at one
// location unless it allows a split, and nothing else is held. A retried
// Reserve whose hold satisfies it is a replay; otherwise it is an
// idempotency conflict.
func AllocationSatisfied(held, requested []Line) bool {
	n := 0
	for _, r := range requested {
		if !r.Allocated() {
			if !slices.Contains(held, r) {
				return false
			}
			n++
			continue
		}
		cands := r.Candidates.IDs()
		got, lines := 0, 0
		for _, h := range held {
			if h.ItemID != r.ItemID {
				continue
			}
			if len(cands) > 0 && !slices.Contains(cands, h.LocationID) {
				return false
			}
			got += h.Quantity
			lines++
		}
		if got != r.Quantity || lines == 0 || (lines > 1 && !r.Split) {
			return false
		}
		n += lines
	}
	return n == len(held)
}

// AllocatedShort reports whether any shortfall falls on a line that
// allocation chose (an item of an allocated line): the choice was made on
// a snapshot that units in flight to other reservers made stale.
func AllocatedShort(requested []Line, short []Shortfall) bool {
	for _, s := range short {
		for _, r := range requested {
			if r.Allocated() && r.ItemID == s.ItemID {
				return true
			}
		}
	}
	return false
}
