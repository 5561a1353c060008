package history

import (
	"maps"

	"github.com/holdfast/holdfast"
)

// Pre-orders (holdfast preorder.go, docs/DESIGN.md "Pre-orders") in the
// model. As in the engines, a key's pre-order headroom is the stock of its
// companion key (Companion): OpPreorder sets the companion's available to
// cap - owed, a reservation short on a key with a cap holds the short part
// on the companion, and every lifecycle step (claim, release, extend,
// expiry) treats the companion line as an ordinary line: a claim deducts it
// from the companion's available (units owed). The model's invariant on
// every key, held <= available, becomes on the companion pre-ordered held +
// owed <= cap. Reservations on a capped key are single-line carts of that
// key (no buyers, bundles, edits or merges: the engine refuses those on
// pre-ordered holds).
//
// What it checks. A reservation answered with Output.Preordered units p of
// q: the hold is (q - p) on the key and p on the companion, which must fit
// the key's and the headroom's sellable units at the linearization point;
// Strict, p > 0 also needs the key short of q there (pre-ordered while
// stock covered it is illegal) and "insufficient" needs stock + headroom
// short of q. Replays and hold reads must answer the hold's pre-ordered
// units. A stock change of a capped key converts owed units: the model
// accepts any conversion x with 0 <= x <= min(owed, available' - held)
// (the engine converts exactly that minimum, oldest first, but the
// maintenance worker may convert later and which checkout's units are
// converted is not visible in the answers), answered available' - x; the
// units go back to the headroom.

// OpPreorder sets a key's pre-order cap (Input.Key, Input.Delta the cap).
const OpPreorder Op = "preorder"

// CompanionOffset: the model's companion of key k is k + CompanionOffset.
const CompanionOffset = 10000

// Companion is the model key whose available is k's pre-order headroom.
func Companion(k int) int { return k + CompanionOffset }

func (s keyModel) withCap(k, c int) keyModel {
	n := keyModel{avail: maps.Clone(s.avail), holds: s.holds, limits: s.limits, caps: maps.Clone(s.caps), drops: s.drops}
	if n.avail == nil {
		n.avail = map[int]int{}
	}
	if n.caps == nil {
		n.caps = map[int]int{}
	}
	n.avail[Companion(k)] = c - s.owed(k)
	n.caps[k] = c
	return n
}

// owed is k's claimed pre-ordered units not yet converted.
func (s keyModel) owed(k int) int {
	if !s.stocked(Companion(k)) {
		return 0
	}
	return s.caps[k] - s.avail[Companion(k)]
}

// preordered is the hold's units on companion keys.
func preordered(h mhold) int {
	n := 0
	for _, l := range h.cart() {
		if l.Key >= CompanionOffset {
			n += l.Qty
		}
	}
	return n
}

// folded is the hold's cart as the buyer sees it: companion lines folded
// into their key's line.
func folded(h mhold) []CartLine {
	var out []CartLine
	for _, l := range h.cart() {
		k := l.Key
		if k >= CompanionOffset {
			k -= CompanionOffset
		}
		found := false
		for i := range out {
			if out[i].Key == k {
				out[i].Qty += l.Qty
				found = true
			}
		}
		if !found {
			out = append(out, CartLine{Key: k, Qty: l.Qty})
		}
	}
	return out
}

// single is a reservation's key and quantity: its one line.
func single(in Input) (k, q int) {
	l := in.Lines()[0]
	return l.Key, l.Qty
}

// splitHold is the hold a reservation of in makes with p units pre-ordered.
func splitHold(in Input, p int) mhold {
	h := newHold(in)
	h.n = 0
	k, q := single(in)
	if q-p > 0 {
		h.lines[h.n] = CartLine{Key: k, Qty: q - p}
		h.n++
	}
	if p > 0 {
		h.lines[h.n] = CartLine{Key: Companion(k), Qty: p}
		h.n++
	}
	return h
}

// splitFits reports whether a reservation of in may be answered with p
// units pre-ordered from s.
func splitFits(s keyModel, in Input, p int) bool {
	k, q := single(in)
	if p < 0 || p > q || s.sellable(k) < q-p {
		return false
	}
	if p == 0 {
		return true
	}
	return s.stocked(Companion(k)) && s.sellable(Companion(k)) >= p && (!in.Strict || s.sellable(k) < q)
}

// stepPreorder is step for what pre-orders change: OpPreorder, reserves
// and stock changes of a capped key, hold reads of pre-ordered holds; ok
// false leaves the operation to step.
func stepPreorder(s keyModel, in Input, out Output) ([]keyModel, bool) {
	unknown := out.Result == ResUnknown || out.Result == ResUntyped
	switch in.Op {
	case OpPreorder:
		outstanding := s.owed(in.Key) + s.heldOn(Companion(in.Key))
		switch {
		case !s.stocked(in.Key) && !unknown:
			return nil, true
		case unknown && in.Delta >= outstanding:
			return []keyModel{s, s.withCap(in.Key, in.Delta)}, true
		case unknown:
			return []keyModel{s}, true
		case in.Delta < outstanding:
			if out.Result == ResInvalid {
				return []keyModel{s}, true
			}
			return nil, true
		case out.Result == ResOK:
			return []keyModel{s.withCap(in.Key, in.Delta)}, true
		}
		return nil, true
	case OpHold:
		h, exists := s.holds[in.CO]
		if exists && out.Result == ResOK && out.Preordered != preordered(h) {
			return nil, true
		}
	case OpAdjust:
		if s.caps[in.Key] == 0 {
			return nil, false
		}
		return stepConvert(s, in, out, unknown), true
	case OpReserve:
		if len(in.Lines()) != 1 || s.caps[in.Lines()[0].Key] == 0 {
			return nil, false
		}
		return stepPreorderReserve(s, in, out, unknown), true
	}
	return nil, false
}

// stepConvert is a stock change of a capped key: the change, then any
// conversion of owed units the bounds allow.
func stepConvert(s keyModel, in Input, out Output, unknown bool) []keyModel {
	k := in.Key
	a := s.avail[k] + in.Delta
	if !s.stocked(k) {
		if unknown {
			return []keyModel{s}
		}
		return nil
	}
	if a < 0 {
		if out.Result == ResInvalid || unknown {
			return []keyModel{s}
		}
		return nil
	}
	var next []keyModel
	if unknown {
		next = append(next, s)
	}
	for x := 0; x <= max(0, min(s.owed(k), a-s.heldOn(k))); x++ {
		if unknown || out.Result == ResOK && out.Available == a-x {
			next = append(next, s.withAvail(k, a-x).withAvail(Companion(k), s.avail[Companion(k)]+x))
		}
	}
	return next
}

// stepPreorderReserve is a single-line reservation of a capped key.
func stepPreorderReserve(s keyModel, in Input, out Output, unknown bool) []keyModel {
	h, exists := s.holds[in.CO]
	k, qty := single(in)
	c := Companion(k)
	if !s.stocked(k) {
		if unknown {
			return []keyModel{s}
		}
		return nil
	}
	if out.Result == ResOK && out.NLines > 0 && (out.NLines != 1 || out.Lines[0] != CartLine{Key: k, Qty: qty}) {
		// Answered lines are folded: one line of the key, all its units.
		return nil
	}
	// made is every hold the reservation may have made from s, answered
	// with p pre-ordered units (p < 0: any).
	made := func(p int) []keyModel {
		var next []keyModel
		for q := 0; q <= qty; q++ {
			if (p < 0 || p == q) && splitFits(s, in, q) {
				next = append(next, s.with(in.CO, splitHold(in, q)))
			}
		}
		return next
	}
	switch {
	case unknown:
		if exists {
			return []keyModel{s}
		}
		return append([]keyModel{s}, made(-1)...)
	case !exists && out.Result == ResInsufficient:
		if !in.Strict || s.sellable(k)+s.sellable(c) < qty {
			return []keyModel{s}
		}
	case !exists && out.Late:
		return made(-1)
	case !exists && out.Result == ResOK && (out.Replayed || out.Exp == in.Now+in.TTL):
		return made(out.Preordered)
	case !exists:
	case h.status == holdfast.StatusHeld:
		if out.Result == ResOK && out.Exp == h.exp && out.Preordered == preordered(h) &&
			len(folded(h)) == 1 && folded(h)[0] == (CartLine{Key: k, Qty: qty}) {
			return []keyModel{s}
		}
		if out.Result == ResConflict && (len(folded(h)) != 1 || folded(h)[0] != CartLine{Key: k, Qty: qty}) {
			return []keyModel{s}
		}
	default:
		ended := map[holdfast.Status]string{holdfast.StatusClaimed: ResClaimed, holdfast.StatusReleased: ResReleased, holdfast.StatusExpired: ResExpired}
		if out.Result == ended[h.status] {
			return []keyModel{s}
		}
	}
	return nil
}
