package history

import (
	"errors"
	"maps"
	"slices"

	"github.com/holdfast/holdfast"
)

// Fair drops (holdfast drop.go, engine/drop.go) in the model.
//
// OpDrop sets a key's drop: Input.Now is the window's start, Input.Window
// its length (µs of the injected clock). A reservation of a new checkout
// on the key then answers, by its Input.Now:
//   - before the window: ResDropNotOpen, nothing changes;
//   - in the window: an entry — ResWaitlisted, the checkout an entrant
//     that holds nothing — once per buyer (Input.Buyer; another checkout
//     of a buyer who entered is ResDropEntered, no buyer is ResInvalid).
//     A hold acknowledged in the window (first come first served) is
//     illegal, and so is "insufficient" when Input.Strict;
//   - after the window: the drop is drawn (by this reservation if nobody
//     drew it yet), and the key is first come first served behind the
//     entrants: while a drawn entrant waits on it, a new hold on it is
//     illegal.
//
// The draw's order is not the model's to choose: the recorder gives each
// entry the rank the published draw gave its checkout (Input.Rank, read
// with Engine.Drop after the run, whose draw the test checks with
// holdfast.VerifyDrop against its commitment). An acknowledged entry
// without a rank (Rank 0: the published draw lost it) is illegal; so the
// history must end after the draw. Fairness is then checked here: grants
// follow the ranks.
//
// Grants. The engine grants entrants only in a waitlist pass
// (ServeWaitlist; no worker runs in the suites), so the model grants at
// OpServe (Input.Key: the drop's key, Input.Now: the clock): it draws a
// due drop, ends waits that ran out (Now >= until; until is the end of the
// window plus Input.Wait before the draw, the draw's now plus Input.Wait
// after it), ends the waits that can no longer be served (the entrant's
// units beyond the key's available), then grants the waiting entrants in
// rank order while the front one fits the key's sellable units (head of
// line: a front entrant that does not fit stops the queue). A granted
// entrant's hold is an ordinary hold from then on — expiry Now + its TTL,
// claims, releases, sweeps — and the reads, retries, claims and releases
// that observe it are checked as for any hold. A grant therefore
// linearizes within the serve call, a point between the entry and every
// read that observes the grant: that is where the engine makes it, and a
// serve whose outcome is unknown may or may not have granted (both states
// follow). More than stock allows, out of rank order, before the window
// ended or to an entrant whose wait ended is illegal, as is an entrant left
// waiting while the key had units for it after the grants before it — by a
// pass that ran alone (between epochs). A pass concurrent with other
// calls (Input.Partial) may stop after any grant: when a release cancels
// the front entrant between the pass's read of the queue's heads and its
// grant, the grant finds the wait ended and the pass grants nothing more
// (the next pass does). Seen on both engines; a delay, not a wrong grant.
//
// A waiting entrant answers reads and retries of its checkout with
// ResWaitlisted (ResWaitExpired once its wait ran out: that ends it),
// claims and extends with ResCheckoutWaiting, a release with
// ResWaitCancelled (ending its wait for good: never granted, its buyer's
// entry still counted). An entry whose wait ended answers how it ended.
// Unservable waits are ended by the engine after a claim or stock change
// commits (a separate statement) and by the next serve: the model marks
// the drawn waiting entrants whose units exceed the key's available after
// a claim or stock change (doomed); a doomed entrant may answer as waiting
// or as unservable until a serve, which ends it (or grants it, when stock
// came back before the engine looked).
//
// The model's carts on a drop key are single-line in the suites; a cart
// may touch one drop (as the engine requires).

// OpDrop sets a drop (Input.Key, Input.Now start, Input.Window length);
// OpServe is a waitlist pass as the key sees it (Input.Key, Input.Now).
const (
	OpDrop  Op = "drop"
	OpServe Op = "serve"
)

// Results of the waitlist and drops.
const (
	ResWaitlisted      = "waitlisted"
	ResWaitExpired     = "waitexpired"
	ResWaitCancelled   = "waitcancelled"
	ResWaitUnservable  = "waitunservable"
	ResCheckoutWaiting = "checkoutwaiting"
	ResDropNotOpen     = "dropnotopen"
	ResDropEntered     = "dropentered"
	ResDropFull        = "dropfull"
)

func classifyDrop(err error) string {
	switch {
	case errors.Is(err, holdfast.ErrWaitlisted):
		return ResWaitlisted
	case errors.Is(err, holdfast.ErrWaitExpired):
		return ResWaitExpired
	case errors.Is(err, holdfast.ErrWaitCancelled):
		return ResWaitCancelled
	case errors.Is(err, holdfast.ErrWaitUnservable):
		return ResWaitUnservable
	case errors.Is(err, holdfast.ErrCheckoutWaiting):
		return ResCheckoutWaiting
	case errors.Is(err, holdfast.ErrDropNotOpen):
		return ResDropNotOpen
	case errors.Is(err, holdfast.ErrDropEntered):
		return ResDropEntered
	case errors.Is(err, holdfast.ErrDropFull):
		return ResDropFull
	}
	return ""
}

// mdrop is a key's drop in the model.
type mdrop struct {
	start, end int64
	drawn      bool
}

// Statuses of an entrant's wait (model only; a granted entrant's hold is
// holdfast.StatusHeld and on).
const (
	statusWaiting     holdfast.Status = "waiting"
	statusWaitExpired holdfast.Status = "wait_expired"
	statusCancelled   holdfast.Status = "wait_cancelled"
	statusUnservable  holdfast.Status = "wait_unservable"
)

// mentry is what the model keeps of a drop's entrant (mhold.entry).
type mentry struct {
	rank      int   // in the published draw; > 0 for every entrant
	wait      int64 // how long it waits once drawn
	ttl, life int64 // its hold's TTL and lifetime once granted
	until     int64 // its wait's end
	doomed    bool  // drawn, waiting, its units beyond available since a claim or stock change
}

func (h mhold) entrant() bool { return h.entry.rank > 0 }

// waits reports whether h is an entrant that holds nothing: waiting, or its
// wait ended without a hold.
func (h mhold) waits() bool {
	return h.entrant() && (h.status == statusWaiting || waitResult(h.status) != "")
}

func (h mhold) keys() []int {
	var ks []int
	for _, l := range h.cart() {
		ks = append(ks, l.Key)
	}
	return ks
}

// waitResult is the answer of an ended wait ("" while it waits or once
// granted).
func waitResult(st holdfast.Status) string {
	switch st {
	case statusWaitExpired:
		return ResWaitExpired
	case statusCancelled:
		return ResWaitCancelled
	case statusUnservable:
		return ResWaitUnservable
	}
	return ""
}

func (s keyModel) withDrop(k int, d mdrop) keyModel {
	n := s
	n.drops = maps.Clone(s.drops)
	if n.drops == nil {
		n.drops = map[int]mdrop{}
	}
	n.drops[k] = d
	return n
}

// dropKey is the first key of the operation's cart with a drop.
func (s keyModel) dropKey(in Input) (int, bool) {
	for _, l := range in.Lines() {
		if _, ok := s.drops[l.Key]; ok {
			return l.Key, true
		}
	}
	return 0, false
}

// onKey reports whether h has a line of k.
func onKey(h mhold, k int) bool {
	return slices.ContainsFunc(h.cart(), func(l CartLine) bool { return l.Key == k })
}

// entrants is the checkouts of k's entrants, in rank order.
func (s keyModel) entrants(k int) []int {
	var out []int
	for co, h := range s.holds {
		if h.entrant() && onKey(h, k) {
			out = append(out, co)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return s.holds[a].entry.rank - s.holds[b].entry.rank })
	return out
}

// blocked reports whether a drawn entrant waits on a key of lines (a doomed
// one may have been ended already): no new buyer gets those keys.
func (s keyModel) blocked(lines []CartLine) bool {
	for _, l := range lines {
		if d, ok := s.drops[l.Key]; !ok || !d.drawn {
			continue
		}
		for _, co := range s.entrants(l.Key) {
			if h := s.holds[co]; h.status == statusWaiting && !h.entry.doomed {
				return true
			}
		}
	}
	return false
}

// draw is s with k's due drop drawn at now: each standing entrant queued
// afresh, waiting now + its wait.
func (s keyModel) draw(k int, now int64) keyModel {
	d := s.drops[k]
	if d.drawn || now < d.end {
		return s
	}
	d.drawn = true
	n := s.withDrop(k, d)
	for _, co := range s.entrants(k) {
		if h := s.holds[co]; h.status == statusWaiting {
			h.entry.until = now + h.entry.wait
			n = n.with(co, h)
		}
	}
	return n
}

// doom marks k's drawn waiting entrants whose units exceed its available
// (after a claim or a stock change).
func (s keyModel) doom(k int) keyModel {
	if d, ok := s.drops[k]; !ok || !d.drawn {
		return s
	}
	n := s
	for _, co := range s.entrants(k) {
		h := s.holds[co]
		if h.status == statusWaiting && !h.entry.doomed && !n.covered(h.cart()) {
			h.entry.doomed = true
			n = n.with(co, h)
		}
	}
	return n
}

// lapsedWait reports whether a waiting entrant's wait ran out at now.
func lapsedWait(h mhold, now int64) bool { return h.status == statusWaiting && now >= h.entry.until }

func endWait(h mhold, st holdfast.Status) mhold {
	h.status = st
	h.entry.doomed = false
	return h
}

// serve is the states a waitlist pass at in.Now leaves on in.Key's drop.
func serve(s keyModel, in Input) []keyModel {
	k := in.Key
	if _, ok := s.drops[k]; !ok {
		return []keyModel{s}
	}
	s = s.draw(k, in.Now)
	if !s.drops[k].drawn {
		return []keyModel{s}
	}
	// Runs out first, then the unservable; a doomed entrant the key could
	// serve again may have been ended or not.
	states := []keyModel{s}
	for _, co := range s.entrants(k) {
		var next []keyModel
		for _, st := range states {
			h := st.holds[co]
			switch {
			case h.status != statusWaiting:
				next = append(next, st)
			case lapsedWait(h, in.Now) && h.entry.doomed:
				// Doomed before it ran out: the engine may have ended it
				// as unservable then (its clock before the wait's end;
				// stock changes carry no time), or not.
				next = append(next, st.with(co, endWait(h, statusWaitExpired)), st.with(co, endWait(h, statusUnservable)))
			case lapsedWait(h, in.Now):
				next = append(next, st.with(co, endWait(h, statusWaitExpired)))
			case !st.covered(h.cart()):
				next = append(next, st.with(co, endWait(h, statusUnservable)))
			case h.entry.doomed:
				h2 := h
				h2.entry.doomed = false
				next = append(next, st.with(co, endWait(h, statusUnservable)), st.with(co, h2))
			default:
				next = append(next, st)
			}
		}
		states = next
	}
	var out []keyModel
	for _, st := range states {
		if in.Partial {
			out = append(out, st) // stopped before its first grant
		}
		for _, co := range st.entrants(k) {
			h := st.holds[co]
			if h.status != statusWaiting {
				continue
			}
			if !st.fits(h.cart()) {
				break // head of line
			}
			h.status, h.exp, h.deadline = holdfast.StatusHeld, in.Now+h.entry.ttl, in.Now+h.entry.life
			st = st.with(co, h)
			if in.Partial {
				out = append(out, st)
			}
		}
		if !in.Partial {
			out = append(out, st)
		}
	}
	return out
}

// enter is the entry in makes from s (ok false when it cannot enter).
func enter(s keyModel, in Input, k int) (keyModel, bool) {
	d := s.drops[k]
	if in.Now < d.start || in.Now >= d.end || d.drawn || in.Buyer == 0 || in.Rank <= 0 || s.entered(k, in.Buyer) {
		return s, false
	}
	h := newHold(in)
	h.status = statusWaiting
	h.entry = mentry{rank: in.Rank, wait: in.Wait, ttl: in.TTL, life: in.Life, until: d.end + in.Wait}
	return s.with(in.CO, h), true
}

// entered reports whether buyer has an entry in k's drop.
func (s keyModel) entered(k, buyer int) bool {
	for _, co := range s.entrants(k) {
		if s.holds[co].buyer == buyer {
			return true
		}
	}
	return false
}

// stepDrop is step for what drops change; ok false leaves the operation
// to stepBase.
func stepDrop(s keyModel, in Input, out Output) ([]keyModel, bool) {
	if len(s.drops) == 0 && in.Op != OpDrop {
		return nil, false
	}
	unknown := out.Result == ResUnknown || out.Result == ResUntyped
	switch in.Op {
	case OpDrop:
		n := s.withDrop(in.Key, mdrop{start: in.Now, end: in.Now + in.Window})
		switch {
		case unknown:
			return []keyModel{s, n}, true
		case out.Result == ResOK && s.stocked(in.Key):
			if d, ok := s.drops[in.Key]; ok && !d.drawn {
				return nil, true // the suites set one drop per key
			}
			return []keyModel{n}, true
		}
		return nil, true
	case OpServe:
		next := serve(s, in)
		if unknown {
			next = append(next, s)
		} else if out.Result != ResOK {
			return nil, true
		}
		return next, true
	case OpClaim, OpAdjust:
		if h, exists := s.holds[in.CO]; in.Op == OpClaim && exists && h.waits() {
			return stepWait(s, in, out, h, unknown), true
		}
		// As without a drop, then what the engine ends after the commit.
		keys := in.keys()
		if h, exists := s.holds[in.CO]; in.Op == OpClaim && exists {
			keys = append(keys, h.keys()...)
		}
		next := stepBase(s, in, out)
		for i := range next {
			for _, k := range keys {
				next[i] = next[i].doom(k)
			}
		}
		return next, true
	}
	switch in.Op {
	case OpReserve, OpHold, OpClaim, OpRelease, OpExtend:
	default:
		return nil, false
	}
	if h, exists := s.holds[in.CO]; exists && h.waits() {
		return stepWait(s, in, out, h, unknown), true
	}
	k, ok := s.dropKey(in)
	if in.Op != OpReserve || !ok {
		return nil, false
	}
	if _, exists := s.holds[in.CO]; exists {
		return nil, false // a hold (a granted entrant's, or made after the window)
	}
	// A new checkout on a drop's key.
	d := s.drops[k]
	switch {
	case unknown:
		next := []keyModel{s}
		if n, ok := enter(s, in, k); ok {
			next = append(next, n)
		}
		if in.Now >= d.end {
			dn := s.draw(k, in.Now)
			next = append(next, dn)
			if !dn.blocked(in.Lines()) {
				if n, ok := apply(dn, in); ok {
					next = append(next, n)
				}
			}
		}
		return next, true
	case in.Now < d.start:
		if out.Result == ResDropNotOpen {
			return []keyModel{s}, true
		}
	case in.Now < d.end && !d.drawn:
		switch {
		case out.Result == ResInvalid && in.Buyer == 0:
			return []keyModel{s}, true
		case out.Result == ResDropEntered && in.Buyer != 0 && s.entered(k, in.Buyer):
			return []keyModel{s}, true
		case out.Result == ResInsufficient && !in.Strict:
			return []keyModel{s}, true
		case out.Result == ResWaitlisted:
			if n, ok := enter(s, in, k); ok {
				return []keyModel{n}, true
			}
		}
	default:
		// After the window: drawn (here, if by nobody yet), then first
		// come first served behind the entrants.
		dn := s.draw(k, in.Now)
		if dn.blocked(in.Lines()) {
			if out.Result == ResInsufficient {
				return []keyModel{dn}, true
			}
			return nil, true
		}
		return stepBase(dn, in, out), true
	}
	return nil, true
}

// stepWait is an operation on a checkout that entered a drop and holds
// nothing (waiting, or its wait ended).
func stepWait(s keyModel, in Input, out Output, h mhold, unknown bool) []keyModel {
	if r := waitResult(h.status); r != "" {
		if unknown || out.Result == r {
			return []keyModel{s}
		}
		return nil
	}
	if unknown {
		next := []keyModel{s}
		if in.Op == OpRelease {
			next = append(next, s.with(in.CO, endWait(h, statusCancelled)))
		}
		if lapsedWait(h, in.Now) {
			next = append(next, s.with(in.CO, endWait(h, statusWaitExpired)))
		}
		return next
	}
	if lapsedWait(h, in.Now) {
		// Whoever sees a wait that ran out ends it (a release may cancel
		// it first).
		if out.Result == ResWaitExpired {
			return []keyModel{s.with(in.CO, endWait(h, statusWaitExpired))}
		}
		if in.Op == OpRelease && out.Result == ResWaitCancelled {
			return []keyModel{s.with(in.CO, endWait(h, statusCancelled))}
		}
		if h.entry.doomed && out.Result == ResWaitUnservable {
			// Doomed before it ran out, and ended as unservable then
			// (see serve).
			return []keyModel{s.with(in.CO, endWait(h, statusUnservable))}
		}
		return nil
	}
	var next []keyModel
	if h.entry.doomed && out.Result == ResWaitUnservable {
		next = append(next, s.with(in.CO, endWait(h, statusUnservable)))
	}
	switch in.Op {
	case OpHold:
		if out.Result == ResWaitlisted {
			next = append(next, s)
		}
	case OpReserve:
		if out.Result == ResWaitlisted && slices.Equal(h.cart(), in.Lines()) && h.buyer == in.Buyer {
			next = append(next, s)
		}
	case OpClaim, OpExtend:
		if out.Result == ResCheckoutWaiting {
			next = append(next, s)
		}
	case OpRelease:
		if out.Result == ResWaitCancelled {
			next = append(next, s.with(in.CO, endWait(h, statusCancelled)))
		}
	}
	return next
}
