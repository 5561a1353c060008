package holdfast

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// RouteEdit names Edit's statements in their sqlcommenter comment, in
// metrics and in logs. ClaimLines runs under RouteClaim.
const RouteEdit = "edit"

// ErrRevisionConflict: an Edit named a revision other than the hold's next
// one (Hold.Revision + 1) or its current one (a retry). Someone else edited
// the hold meanwhile, or the caller's copy is out of date: read the hold
// and edit again from what it holds now. The error is a
// *RevisionConflictError carrying the current revision. Nothing changed.
var ErrRevisionConflict = errors.New("holdfast: hold revision conflict")

// RevisionConflictError is an Edit on an out-of-date revision. It matches
// ErrRevisionConflict.
type RevisionConflictError struct {
	// Current is the hold's revision now; the next edit names Current + 1.
	Current int64
	// Requested is the revision the edit named.
	Requested int64
}

func (e *RevisionConflictError) Error() string {
	return fmt.Sprintf("holdfast: hold revision conflict: the hold is at revision %d; an edit names revision %d, got %d", e.Current, e.Current+1, e.Requested)
}

func (e *RevisionConflictError) Is(target error) bool { return target == ErrRevisionConflict }

// EditParams replaces a held checkout's lines.
type EditParams struct {
	ShopID     int64
	CheckoutID uuid.UUID
	// Revision is the revision the edit makes: the hold's current revision
	// + 1. The same revision again with the same lines and TTL is a retry
	// of this edit and answers the hold as it left it (Replayed set, the
	// expiry not moved again); with other lines or another TTL it is
	// ErrIdempotencyConflict. Revision 1 is the reservation's, which
	// carries TTL 0.
	Revision int64
	// Lines are the hold's new lines, all of them, with the bounds of a
	// Reserve's cart. Lines not given are given back.
	Lines []Line
	// TTL, when positive, moves the expiry to now + TTL, capped by the
	// hold's deadline (Config.HoldLifetimeMax after it was created).
	// Zero keeps the current expiry.
	TTL time.Duration
}

// ValidateEdit checks an edit against cfg's bounds and returns its lines
// sorted in key order. A rejected edit is an *ArgumentError naming the
// field; every engine validates edits with it.
func ValidateEdit(cfg Config, p EditParams) ([]Line, error) {
	cfg = cfg.WithDefaults()
	if err := ValidateCheckout(p.ShopID, p.CheckoutID); err != nil {
		return nil, err
	}
	if p.Revision < 1 {
		return nil, NewArgumentError("revision", "must be at least 1 (the hold's current revision + 1)")
	}
	if p.TTL < 0 || (p.TTL > 0 && (p.TTL < HoldTTLMin || p.TTL > cfg.HoldLifetimeMax)) {
		return nil, NewArgumentError("ttl", "must be 0 (keep the expiry) or between %v and %v", HoldTTLMin, cfg.HoldLifetimeMax)
	}
	lines, err := ValidateLines(cfg, p.Lines)
	if err != nil {
		return nil, err
	}
	// An edit keeps, grows or shrinks held keys: allocation is Reserve's.
	for i, l := range p.Lines {
		if l.LocationID == 0 {
			return nil, NewArgumentError(fmt.Sprintf("lines[%d].location_id", i), "an edit names each line's location (allocation, location_id 0, is for Reserve)")
		}
	}
	return lines, nil
}

// DiffLines compares a hold's lines with the lines an edit gives it (both
// in key order) and returns, in key order, the units to take (grow: the
// quantity each key needs beyond what is held) and the units to give back
// (shrink: the quantity each key holds beyond what it keeps). Keys in both
// with the same quantity are in neither: their units stay where they are.
func DiffLines(held, want []Line) (grow, shrink []Line) {
	i, j := 0, 0
	for i < len(held) || j < len(want) {
		var c int
		switch {
		case i == len(held):
			c = 1
		case j == len(want):
			c = -1
		default:
			c = CompareLines(held[i], want[j])
		}
		switch {
		case c < 0: // held only: give it all back
			shrink = append(shrink, held[i])
			i++
		case c > 0: // new line: take it all
			grow = append(grow, want[j])
			j++
		default:
			l := want[j]
			if d := want[j].Quantity - held[i].Quantity; d > 0 {
				l.Quantity = d
				grow = append(grow, l)
			} else if d < 0 {
				l.Quantity = -d
				shrink = append(shrink, l)
			}
			i++
			j++
		}
	}
	return grow, shrink
}

// EditShortfall restates the shortfall of an edit's growth (requested: the
// extra units; sellable: what others left) as what the caller asked for:
// the line's new quantity, and the most the checkout could hold (what it
// holds plus what is sellable).
func EditShortfall(held, want []Line, short []Shortfall) []Shortfall {
	out := make([]Shortfall, len(short))
	for i, s := range short {
		out[i] = s
		for _, l := range want {
			if l.ItemID == s.ItemID && l.LocationID == s.LocationID {
				out[i].Requested = l.Quantity
			}
		}
		for _, l := range held {
			if l.ItemID == s.ItemID && l.LocationID == s.LocationID {
				out[i].Sellable += l.Quantity
			}
		}
	}
	return out
}

// ValidateClaimLines checks a partial claim's lines against cfg's bounds
// and returns them sorted in key order. Every engine validates partial
// claims with it; SplitClaim then checks them against the hold.
func ValidateClaimLines(cfg Config, shop int64, checkout uuid.UUID, lines []Line) ([]Line, error) {
	if err := ValidateCheckout(shop, checkout); err != nil {
		return nil, err
	}
	return ValidateLines(cfg, lines)
}

// SplitClaim splits a hold's lines (key order) into the claimed ones (key
// order) and the rest, which is released: in key order, each key's held quantity minus what is claimed, keys claimed
// whole left out. A line the hold does not have, or a quantity above what
// it holds, is an *ArgumentError naming the caller's line.
func SplitClaim(held, in []Line) (claimed, released []Line, err error) {
	got := make(map[[2]int64]int, len(in))
	for i, l := range in {
		j := slices.IndexFunc(held, func(h Line) bool { return h.ItemID == l.ItemID && h.LocationID == l.LocationID })
		if j < 0 {
			return nil, nil, NewArgumentError(fmt.Sprintf("lines[%d]", i), "item %d at location %d is not held by the checkout", l.ItemID, l.LocationID)
		}
		if l.Quantity > held[j].Quantity {
			return nil, nil, NewArgumentError(fmt.Sprintf("lines[%d].quantity", i), "the checkout holds %d of item %d at location %d, cannot claim %d", held[j].Quantity, l.ItemID, l.LocationID, l.Quantity)
		}
		got[[2]int64{l.ItemID, l.LocationID}] = l.Quantity
	}
	for _, h := range held {
		q := got[[2]int64{h.ItemID, h.LocationID}]
		if q > 0 {
			claimed = append(claimed, Line{ItemID: h.ItemID, LocationID: h.LocationID, Quantity: q})
		}
		if h.Quantity > q {
			released = append(released, Line{ItemID: h.ItemID, LocationID: h.LocationID, Quantity: h.Quantity - q})
		}
	}
	return claimed, released, nil
}

// BuyerGrownLines returns the lines of want whose item an edit grows (more
// units of the item in total than held): the lines a buyer's limits are
// checked on. An edit that keeps or shrinks every item is never refused by
// a limit (one lowered since the hold was made included).
func BuyerGrownLines(held, want []Line) []Line {
	hi, hq := BuyerItemQuantities(held)
	wi, wq := BuyerItemQuantities(want)
	var out []Line
	for i, item := range wi {
		j := slices.Index(hi, item)
		if j >= 0 && hq[j] >= wq[i] {
			continue
		}
		for _, l := range want {
			if l.ItemID == item {
				out = append(out, l)
			}
		}
	}
	return out
}
