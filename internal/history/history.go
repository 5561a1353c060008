// Package history records concurrent calls on an engine (any engine: it knows
// only package holdfast's answers) and checks them linearizable against the
// model of a key with porcupine: the behaviour suite (enginetest) and the
// fault suites record into a History and Check it; a failed check saves the
// history and prints how to replay and explain it.
package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/holdfast/holdfast"
)

// Op names an operation in a history.
type Op string

// Operations the model knows. OpSet is the initial stocking of a key;
// OpSweep expires every hold past its expiry, on every key (a concurrent
// one, Input.Partial, may skip holds whose rows were locked).
const (
	OpSet     Op = "set"
	OpReserve Op = "reserve"
	OpClaim   Op = "claim"
	OpRelease Op = "release"
	OpExtend  Op = "extend"
	OpAdjust  Op = "adjust"
	OpLevel   Op = "level"
	OpSweep   Op = "sweep"
	OpHold    Op = "hold" // a read of a checkout's hold (Client.Hold)
)

// Results of an operation, from its error (see Classify).
const (
	ResOK            = "ok"
	ResInsufficient  = "insufficient"
	ResNotFound      = "notfound"
	ResClaimed       = "claimed"
	ResReleased      = "released"
	ResExpired       = "expired"
	ResLifetime      = "lifetime"
	ResOverCommitted = "overcommitted"
	ResInvalid       = "invalid"
	ResConflict      = "conflict"
	ResUnknown       = "unknown" // the outcome was not learnt: it may or may not have happened
	ResUntyped       = "untyped" // an error that is none of holdfast's typed errors: a defect
)

// Classify maps an operation's error to a result.
func Classify(err error) string {
	switch {
	case err == nil:
		return ResOK
	case classifyDrop(err) != "":
		return classifyDrop(err)
	case errors.Is(err, holdfast.ErrMergeInto):
		var me *holdfast.MergeIntoError
		if errors.As(err, &me) {
			return ResIntoPrefix + Classify(me.Err)
		}
	case errors.Is(err, holdfast.ErrBuyerLimitExceeded):
		return ResBuyerLimit
	case errors.Is(err, holdfast.ErrInsufficientStock):
		return ResInsufficient
	case errors.Is(err, holdfast.ErrNotFound):
		return ResNotFound
	case errors.Is(err, holdfast.ErrHoldClaimed):
		return ResClaimed
	case errors.Is(err, holdfast.ErrHoldReleased):
		return ResReleased
	case errors.Is(err, holdfast.ErrHoldExpired):
		return ResExpired
	case errors.Is(err, holdfast.ErrLifetimeExceeded):
		return ResLifetime
	case errors.Is(err, holdfast.ErrOverCommitted):
		return ResOverCommitted
	case errors.Is(err, holdfast.ErrInvalidArgument):
		return ResInvalid
	case errors.Is(err, holdfast.ErrIdempotencyConflict):
		return ResConflict
	case errors.Is(err, holdfast.ErrRevisionConflict):
		return ResRevisionConflict
	case errors.Is(err, holdfast.ErrUnavailable), errors.Is(err, holdfast.ErrOutcomeUnknown),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ResUnknown
	}
	return ResUntyped
}

// CartLinesMax bounds the lines of a cart the model knows (Input.Cart).
const CartLinesMax = 4

// SkipMax bounds the checkouts a concurrent sweep may have skipped
// (Input.Skip).
const SkipMax = 16

// CartLine is one line of a cart in the model: a key (its index in the
// Env) and a quantity.
type CartLine struct{ Key, Qty int }

// Input is an operation. Reserve, claim, release, extend and hold name a
// checkout (CO) and its cart's lines (Cart; for claim, release, extend and
// hold only the keys matter, the quantities are the hold's); set, adjust and
// level name one key (Key). A sweep (Key -1) touches every key. Times are
// microseconds of the injected clock. Input is comparable (porcupine keys
// maps by operation), hence the fixed arrays.
type Input struct {
	Op    Op
	Key   int // set, adjust, level: the key; a one-line cart: its key; sweep: -1
	CO    int // checkout number within the history
	Qty   int // a one-line cart's quantity
	Cart  [CartLinesMax]CartLine
	NCart int
	Delta int   // adjust delta; set: the level
	Now   int64 // the clock when the operation ran (constant within an epoch)
	TTL   int64 // reserve and extend
	Life  int64 // reserve: HoldLifetimeMax
	// Strict: an "insufficient stock" reserve or a late claim answered
	// "hold expired" is illegal when the model had enough sellable units
	// for every line throughout the call. Env sets it unless a key of the
	// cart is a pool key (its takes skip rows locked by other reservers, so
	// units in flight to a reservation that then rolls back — a replay, a
	// killed backend — are invisible) or its strategy changed, or may have,
	// during the call. Unset (the zero value), those answers are always
	// allowed.
	Strict bool
	// Partial: a sweep that ran concurrently with other operations. It
	// expires every held hold past its expiry except, possibly, those of
	// the checkouts in Skip (operations on them overlapped the sweep and may
	// have held their rows locked, which the sweep skips); SkipAll: any of
	// them (more than SkipMax overlapped).
	Partial bool
	Skip    [SkipMax]int
	NSkip   int
	SkipAll bool
	// Rev is an edit's revision (OpEdit).
	Rev int64
	// Into is a merge's destination checkout (OpMerge; CO is the source).
	Into int
	// Buyer is a reservation's buyer (0: none; see merge.go).
	Buyer int
	// Bundle is how many bundles a reservation's cart holds, expanded
	// into its components by the recorder (a label only; see merge.go).
	Bundle int
	// Rank, Wait and Window: drops (drop.go).
	Rank   int
	Wait   int64
	Window int64
}

// Lines is the cart's lines.
func (in Input) Lines() []CartLine {
	if in.NCart == 0 && in.Key >= 0 && in.Op != OpSet && in.Op != OpAdjust && in.Op != OpLevel && in.Op != OpSweep && in.Op != OpLimit && in.Op != OpPreorder && in.Op != OpDrop && in.Op != OpServe {
		return []CartLine{{Key: in.Key, Qty: in.Qty}}
	}
	return in.Cart[:in.NCart]
}

// keys is every key the operation touches; nil for a sweep (all of them).
func (in Input) keys() []int {
	switch in.Op {
	case OpSweep:
		return nil
	case OpSet, OpAdjust, OpLevel, OpLimit, OpPreorder, OpDrop, OpServe:
		return []int{in.Key}
	}
	var ks []int
	for _, l := range in.Lines() {
		ks = append(ks, l.Key)
	}
	return ks
}

// Output is what the client was told.
type Output struct {
	Result    string
	Status    holdfast.Status // claim, release and hold: the returned hold's status
	Exp       int64           // reserve, extend and hold: the returned expiry
	Available int             // adjust and level
	Held      int             // adjust and level
	// Late: a reserve or extend answered that the checkout had ended
	// (claimed, released, expired). The engine retries a call whose COMMIT
	// answer was lost; when the first attempt did commit and the hold was
	// ended before the retry, the retry reports the ending although this
	// call created (or extended) the hold. Both effects happened within the
	// call's window.
	Late bool
	// Replayed: a reserve answered with an existing hold. When the model
	// has no hold yet, this call created it (its first attempt committed,
	// the answer was lost, the engine's retry found the hold) and the
	// expiry answered is the hold's as the retry read it, after any
	// extension in between.
	Replayed bool
	// Lines are the answered hold's lines (reserve, merge: the
	// destination's; NLines 0 on a reserve: not recorded).
	Lines  [CartLinesMax]CartLine
	NLines int
	// Into is a hold read's Hold.MergedInto: the destination's checkout
	// number + 1 (0: none).
	Into int
	// Preordered: a reserve's or hold read's pre-ordered units (the
	// answered line's Line.Preordered; single-line carts, preorder.go).
	Preordered int
}

type mhold struct {
	lines         [CartLinesMax]CartLine
	n             int
	status        holdfast.Status
	exp, deadline int64
	edits         int64  // the hold's revision is 1 + edits
	editTTL       int64  // the TTL of the edit that made the revision (0: none, the reservation, or a merge)
	into          int    // merged into this checkout number + 1 (0: not merged)
	buyer         int    // 0: none
	entry         mentry // a drop's entrant (drop.go); zero for other holds
}

func (h mhold) cart() []CartLine { return h.lines[:h.n] }

// keyModel is the model's state of one partition (the keys that carts
// connect): each key's available stock (absent until stocked) and every
// checkout's hold. States are never mutated: each step copies.
type keyModel struct {
	avail  map[int]int
	holds  map[int]mhold
	limits map[int]int   // per-buyer limits by key (merge.go)
	caps   map[int]int   // pre-order caps by key (preorder.go)
	drops  map[int]mdrop // drops by key (drop.go)
}

func (s keyModel) stocked(k int) bool { _, ok := s.avail[k]; return ok }

func (s keyModel) heldOn(k int) int {
	n := 0
	for _, h := range s.holds {
		if h.status == holdfast.StatusHeld {
			for _, l := range h.cart() {
				if l.Key == k {
					n += l.Qty
				}
			}
		}
	}
	return n
}

func (s keyModel) sellable(k int) int { return max(0, s.avail[k]-s.heldOn(k)) }

// fits reports whether every line has sellable stock for it.
func (s keyModel) fits(lines []CartLine) bool {
	for _, l := range lines {
		if !s.stocked(l.Key) || s.sellable(l.Key) < l.Qty {
			return false
		}
	}
	return true
}

// covered reports whether every line's key has available stock for it.
func (s keyModel) covered(lines []CartLine) bool {
	for _, l := range lines {
		if s.avail[l.Key] < l.Qty {
			return false
		}
	}
	return true
}

func (s keyModel) with(co int, h mhold) keyModel {
	n := keyModel{avail: s.avail, holds: maps.Clone(s.holds), limits: s.limits, caps: s.caps, drops: s.drops}
	if n.holds == nil {
		n.holds = map[int]mhold{}
	}
	n.holds[co] = h
	return n
}

func (s keyModel) withAvail(k, a int) keyModel {
	n := keyModel{avail: maps.Clone(s.avail), holds: s.holds, limits: s.limits, caps: s.caps, drops: s.drops}
	if n.avail == nil {
		n.avail = map[int]int{}
	}
	n.avail[k] = a
	return n
}

// deduct is s with every line's quantity taken from its key's available.
func (s keyModel) deduct(lines []CartLine) keyModel {
	n := keyModel{avail: maps.Clone(s.avail), holds: s.holds, limits: s.limits, caps: s.caps, drops: s.drops}
	for _, l := range lines {
		n.avail[l.Key] -= l.Qty
	}
	return n
}

func newHold(in Input) mhold {
	h := mhold{status: holdfast.StatusHeld, exp: in.Now + in.TTL, deadline: in.Now + in.Life, buyer: in.Buyer}
	h.n = copy(h.lines[:], in.Lines())
	return h
}

// apply is an operation's successful effect, for operations whose outcome is
// unknown; ok is false when it cannot succeed from s.
func apply(s keyModel, in Input) (keyModel, bool) {
	h, exists := s.holds[in.CO]
	switch in.Op {
	case OpSet:
		return s.withAvail(in.Key, in.Delta), true
	case OpReserve:
		if !exists && s.fits(in.Lines()) && !s.overLimit(in.Buyer, in.Lines(), in.CO) {
			return s.with(in.CO, newHold(in)), true
		}
	case OpClaim:
		if exists && h.status == holdfast.StatusHeld && s.covered(h.cart()) {
			h.status = holdfast.StatusClaimed
			return s.with(in.CO, h).deduct(h.cart()), true
		}
		if exists && h.status == holdfast.StatusExpired && s.fits(h.cart()) && !s.overLimit(h.buyer, h.cart(), in.CO) {
			h.status = holdfast.StatusClaimed
			return s.with(in.CO, h).deduct(h.cart()), true
		}
	case OpRelease:
		if exists && h.status == holdfast.StatusHeld {
			h.status = releasedAs(h, in)
			return s.with(in.CO, h), true
		}
	case OpExtend:
		if exists && h.status == holdfast.StatusHeld && in.Now+in.TTL <= h.deadline {
			h.exp = in.Now + in.TTL
			return s.with(in.CO, h), true
		}
	case OpAdjust:
		if s.stocked(in.Key) && s.avail[in.Key]+in.Delta >= 0 {
			return s.withAvail(in.Key, s.avail[in.Key]+in.Delta), true
		}
	case OpSweep:
		return sweep(s, in)[0], true
	case OpEdit:
		return applyEdit(s, in)
	case OpMerge:
		return applyMerge(s, in)
	case OpLimit:
		return s.withLimit(in.Key, in.Delta), true
	}
	return s, false
}

// releasedAs is the status a release leaves a held hold in: released, or
// expired when the hold is past its expiry (valid up to and including its
// expiry instant) and not swept yet — the release ends it as the sweeper
// would have.
func releasedAs(h mhold, in Input) holdfast.Status {
	if in.Now > h.exp {
		return holdfast.StatusExpired
	}
	return holdfast.StatusReleased
}

// sweep returns the states a sweep can leave: every held hold past its
// expiry expired, except that a partial sweep may have skipped those in
// Skip (any subset of them), or any of them when SkipAll.
func sweep(s keyModel, in Input) []keyModel {
	var must, may []int
	skip := in.Skip[:in.NSkip]
	for _, co := range slices.Sorted(maps.Keys(s.holds)) {
		h := s.holds[co]
		if h.status != holdfast.StatusHeld || h.exp >= in.Now {
			continue
		}
		if in.Partial && (in.SkipAll || slices.Contains(skip, co)) {
			may = append(may, co)
		} else {
			must = append(must, co)
		}
	}
	base := keyModel{avail: s.avail, holds: maps.Clone(s.holds), limits: s.limits, caps: s.caps, drops: s.drops}
	for _, co := range must {
		h := base.holds[co]
		h.status = holdfast.StatusExpired
		base.holds[co] = h
	}
	out := []keyModel{base}
	for _, co := range may {
		for _, st := range slices.Clone(out) {
			n := keyModel{avail: st.avail, holds: maps.Clone(st.holds), limits: st.limits, caps: st.caps, drops: st.drops}
			h := n.holds[co]
			h.status = holdfast.StatusExpired
			n.holds[co] = h
			out = append(out, n)
		}
	}
	return out
}

// step returns the states the partition can be in after in returned out,
// none if out is impossible from s.
func step(s keyModel, in Input, out Output) []keyModel {
	if next, ok := stepDrop(s, in, out); ok {
		return next
	}
	return stepBase(s, in, out)
}

// stepBase is step without drops' rules (drop.go runs it for the
// operations a drop leaves as they are).
func stepBase(s keyModel, in Input, out Output) []keyModel {
	if next, ok := stepPreorder(s, in, out); ok {
		return next
	}
	if out.Result == ResUnknown || out.Result == ResUntyped {
		if in.Op == OpSweep {
			return append([]keyModel{s}, sweep(s, in)...)
		}
		if n, ok := apply(s, in); ok {
			return []keyModel{s, n}
		}
		return []keyModel{s}
	}
	if in.Op == OpReserve && out.Result == ResOK && out.NLines > 0 {
		// The answered lines are the hold's: a bundle's components, all
		// of them, never the bundle's item.
		var next []keyModel
		for _, n := range stepKnown(s, in, out) {
			if slices.Equal(n.holds[in.CO].cart(), out.Lines[:out.NLines]) {
				next = append(next, n)
			}
		}
		return next
	}
	return stepKnown(s, in, out)
}

// stepKnown is step for an operation whose answer is known.
func stepKnown(s keyModel, in Input, out Output) []keyModel {
	if in.Op != OpSet && in.Op != OpSweep && in.Op != OpLimit {
		for _, k := range in.keys() {
			if !s.stocked(k) {
				return nil
			}
		}
	}
	h, exists := s.holds[in.CO]
	ended := func() string {
		switch h.status {
		case holdfast.StatusClaimed:
			return ResClaimed
		case holdfast.StatusReleased:
			return ResReleased
		case holdfast.StatusExpired:
			return ResExpired
		}
		return ""
	}
	yes := func(n keyModel) []keyModel { return []keyModel{n} }
	switch in.Op {
	case OpSet, OpLimit:
		if out.Result == ResOK {
			n, _ := apply(s, in)
			return yes(n)
		}
	case OpMerge:
		return stepMerge(s, in, out)
	case OpSweep:
		if out.Result == ResOK {
			return sweep(s, in)
		}
	case OpLevel:
		if out.Result == ResOK && out.Available == s.avail[in.Key] && out.Held == s.heldOn(in.Key) {
			return yes(s)
		}
	case OpHold:
		switch {
		case !exists:
			if out.Result == ResNotFound {
				return yes(s)
			}
		case out.Into != h.into:
			// Hold.MergedInto names where a merged source went, and only
			// that.
			return nil
		case out.Result == ResOK && out.Status == h.status && (h.status != holdfast.StatusHeld || out.Exp == h.exp):
			return yes(s)
		case out.Result == ResOK && h.status == holdfast.StatusHeld && out.Status == holdfast.StatusExpired &&
			out.Exp == h.exp && in.Now > h.exp:
			// Past its expiry, not swept yet: reads as expired (and still
			// claimable); the model's hold stays held until a sweep.
			return yes(s)
		}
	case OpAdjust:
		a := s.avail[in.Key]
		if a+in.Delta < 0 {
			if out.Result == ResInvalid {
				return yes(s)
			}
			return nil
		}
		// Available is exact (the level row is locked until commit); held
		// is read by a statement before the commit, while reservations
		// that do not take the key's lock may commit: not checked.
		if out.Result == ResOK && out.Available == a+in.Delta {
			return yes(s.withAvail(in.Key, a+in.Delta))
		}
	case OpReserve:
		switch {
		case out.Result == ResBuyerLimit && !exists:
			// Refused by the buyer's limit: only past it.
			if s.overLimit(in.Buyer, in.Lines(), in.CO) {
				return yes(s)
			}
		case out.Result == ResInsufficient && !exists:
			// Sold out: some line's key had fewer sellable units than
			// the line at this point (or the answer is not checked, see
			// Input.Strict).
			if !in.Strict || !s.fits(in.Lines()) {
				return yes(s)
			}
		case !exists && out.Late:
			if n, ok := apply(s, in); ok {
				return yes(n)
			}
		case !exists && out.Result == ResOK && out.Replayed:
			if n, ok := apply(s, in); ok {
				return yes(n)
			}
		case !exists:
			if out.Result == ResOK && out.Exp == in.Now+in.TTL {
				if n, ok := apply(s, in); ok {
					return yes(n)
				}
			}
		case h.status == holdfast.StatusHeld && out.Result == ResConflict && (!slices.Equal(h.cart(), in.Lines()) || h.buyer != in.Buyer):
			// An edit or a merge gave the hold other lines, or it was made
			// for another buyer (a merge's destination takes its source's).
			return yes(s)
		case h.status == holdfast.StatusHeld:
			if out.Result == ResOK && out.Exp == h.exp && slices.Equal(h.cart(), in.Lines()) && h.buyer == in.Buyer {
				return yes(s)
			}
		default:
			if out.Result == ended() {
				return yes(s)
			}
		}
	case OpClaim:
		switch {
		case !exists:
			if out.Result == ResNotFound {
				return yes(s)
			}
		case h.status == holdfast.StatusHeld:
			if !s.covered(h.cart()) {
				if out.Result == ResOverCommitted {
					return yes(s)
				}
				return nil
			}
			if out.Result == ResOK && out.Status == holdfast.StatusClaimed {
				n, _ := apply(s, in)
				return yes(n)
			}
		case h.status == holdfast.StatusClaimed:
			if out.Result == ResOK && out.Status == holdfast.StatusClaimed {
				return yes(s)
			}
		case h.status == holdfast.StatusReleased:
			if out.Result == ResReleased {
				return yes(s)
			}
		case h.status == holdfast.StatusExpired:
			// A late claim: the same lines from sellable stock, or
			// "expired" only when some line's key was short (or the answer
			// is not checked, see Input.Strict).
			if out.Result == ResExpired && (!in.Strict || !s.fits(h.cart())) {
				return yes(s)
			}
			if out.Result == ResBuyerLimit && s.overLimit(h.buyer, h.cart(), in.CO) {
				return yes(s)
			}
			if out.Result == ResOK && out.Status == holdfast.StatusClaimed {
				if n, ok := apply(s, in); ok {
					return yes(n)
				}
			}
		}
	case OpRelease:
		switch {
		case !exists:
			if out.Result == ResNotFound {
				return yes(s)
			}
		case h.status == holdfast.StatusHeld:
			if out.Result == ResOK && out.Status == releasedAs(h, in) {
				n, _ := apply(s, in)
				return yes(n)
			}
		case h.status == holdfast.StatusClaimed:
			if out.Result == ResClaimed {
				return yes(s)
			}
		default:
			if out.Result == ResOK && out.Status == h.status {
				return yes(s)
			}
		}
	case OpEdit:
		return stepEdit(s, in, out)
	case OpExtend:
		if out.Late && exists {
			// Its first attempt may have extended the hold before the
			// hold ended (answer lost, retried): either effect.
			var next []keyModel
			if out.Result == ended() {
				next = append(next, s)
			}
			if n, ok := apply(s, in); ok {
				next = append(next, n)
			}
			return next
		}
		switch {
		case !exists:
			if out.Result == ResNotFound {
				return yes(s)
			}
		case h.status == holdfast.StatusHeld:
			if in.Now+in.TTL > h.deadline {
				if out.Result == ResLifetime {
					return yes(s)
				}
				return nil
			}
			if out.Result == ResOK && out.Exp == in.Now+in.TTL {
				n, _ := apply(s, in)
				return yes(n)
			}
		default:
			if out.Result == ended() {
				return yes(s)
			}
		}
	}
	return nil
}

func equalStates(a, b keyModel) bool {
	return maps.Equal(a.avail, b.avail) && maps.Equal(a.holds, b.holds) && maps.Equal(a.limits, b.limits) && maps.Equal(a.caps, b.caps) && maps.Equal(a.drops, b.drops)
}

func describeState(s keyModel) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(s.avail)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "key%d available %d held %d", k, s.avail[k], s.heldOn(k))
		if c, ok := s.caps[k]; ok {
			fmt.Fprintf(&b, " cap %d owed %d", c, s.owed(k))
		}
	}
	b.WriteString(":")
	for _, co := range slices.Sorted(maps.Keys(s.holds)) {
		h := s.holds[co]
		fmt.Fprintf(&b, " co%d=%v/%s", co, h.cart(), h.status)
		if h.into > 0 {
			fmt.Fprintf(&b, "->co%d", h.into-1)
		}
		if h.buyer > 0 {
			fmt.Fprintf(&b, "(buyer%d)", h.buyer)
		}
		if h.entrant() {
			fmt.Fprintf(&b, "(rank%d until %d doomed=%v)", h.entry.rank, h.entry.until, h.entry.doomed)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.drops)) {
		d := s.drops[k]
		fmt.Fprintf(&b, " drop key%d [%d,%d) drawn=%v", k, d.start, d.end, d.drawn)
	}
	return b.String()
}

func initState() keyModel { return keyModel{avail: map[int]int{}, holds: map[int]mhold{}} }

// Model is the porcupine model of inventory keys: partitioned into groups
// of keys that multi-key carts connect, each partition a nondeterministic
// model (an operation whose outcome is unknown may or may not have
// happened; a concurrent sweep may have skipped holds whose rows were
// locked). docs/FAULTS.md lists what it makes illegal and what it does
// not check.
var Model = porcupine.NondeterministicModel{
	Partition: partition,
	Init:      func() []any { return []any{initState()} },
	Step: func(state, input, output any) []any {
		next := step(state.(keyModel), input.(Input), output.(Output))
		out := make([]any, len(next))
		for i, n := range next {
			out[i] = n
		}
		return out
	},
	Equal:         func(a, b any) bool { return equalStates(a.(keyModel), b.(keyModel)) },
	DescribeState: func(s any) string { return describeState(s.(keyModel)) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		switch in.Op {
		case OpAdjust, OpSet:
			return fmt.Sprintf("%s(key%d %d) -> %s avail=%d held=%d", in.Op, in.Key, in.Delta, out.Result, out.Available, out.Held)
		case OpLevel:
			return fmt.Sprintf("level(key%d) -> avail=%d held=%d", in.Key, out.Available, out.Held)
		case OpPreorder:
			return fmt.Sprintf("preorder(key%d cap %d) -> %s", in.Key, in.Delta, out.Result)
		case OpDrop:
			return fmt.Sprintf("drop(key%d from %d for %d) -> %s", in.Key, in.Now, in.Window, out.Result)
		case OpServe:
			return fmt.Sprintf("serve(key%d now=%d) -> %s", in.Key, in.Now, out.Result)
		case OpLimit:
			return fmt.Sprintf("limit(key%d %d per buyer) -> %s", in.Key, in.Delta, out.Result)
		case OpMerge:
			return fmt.Sprintf("merge(co%d into co%d, now=%d) -> %s %s %v exp=%d replayed=%v", in.CO, in.Into, in.Now, out.Result, out.Status, out.Lines[:out.NLines], out.Exp, out.Replayed)
		case OpSweep:
			if in.Partial {
				return fmt.Sprintf("sweep(now=%d, concurrent, may skip %v all=%v) -> %s", in.Now, in.Skip[:in.NSkip], in.SkipAll, out.Result)
			}
			return fmt.Sprintf("sweep(now=%d) -> %s", in.Now, out.Result)
		}
		lenient := ""
		if !in.Strict {
			lenient = " lenient"
		}
		extra := ""
		if in.Buyer > 0 {
			extra += fmt.Sprintf(" buyer%d", in.Buyer)
		}
		if in.Rank > 0 {
			extra += fmt.Sprintf(" rank%d", in.Rank)
		}
		if in.Bundle > 0 {
			extra += fmt.Sprintf(" (%d bundles)", in.Bundle)
		}
		if out.NLines > 0 {
			extra += fmt.Sprintf(" lines=%v", out.Lines[:out.NLines])
		}
		if out.Preordered > 0 {
			extra += fmt.Sprintf(" preordered=%d", out.Preordered)
		}
		if out.Into > 0 {
			extra += fmt.Sprintf(" merged into co%d", out.Into-1)
		}
		return fmt.Sprintf("%s(co%d %v now=%d%s) -> %s %s exp=%d%s", in.Op, in.CO, in.Lines(), in.Now, lenient, out.Result, out.Status, out.Exp, extra)
	},
}

// partition groups operations by connected keys: two keys are in one
// partition when a cart spans both. Sweeps go to every partition.
func partition(ops []porcupine.Operation) [][]porcupine.Operation {
	parent := map[int]int{}
	var find func(k int) int
	find = func(k int) int {
		p, ok := parent[k]
		if !ok {
			parent[k] = k
			return k
		}
		if p == k {
			return k
		}
		r := find(p)
		parent[k] = r
		return r
	}
	// Claims, releases, extends and reads of a checkout carry its cart's
	// keys; a checkout's operations all join its first key's group.
	for _, op := range ops {
		ks := op.Input.(Input).keys()
		for _, k := range ks {
			parent[find(k)] = find(ks[0])
		}
	}
	byRoot := map[int][]porcupine.Operation{}
	var sweeps []porcupine.Operation
	for _, op := range ops {
		ks := op.Input.(Input).keys()
		if len(ks) == 0 {
			sweeps = append(sweeps, op)
			continue
		}
		r := find(ks[0])
		byRoot[r] = append(byRoot[r], op)
	}
	var out [][]porcupine.Operation
	for _, r := range slices.Sorted(maps.Keys(byRoot)) {
		out = append(out, append(byRoot[r], sweeps...))
	}
	return out
}

// History records operations with their call and return times. Safe for
// concurrent use.
type History struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
	marks []int64 // quiescence points, ascending (see Mark)
}

// NewHistory starts an empty history.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is a timestamp for Call and Return.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records an operation that returned now.
func (h *History) Add(client int, in Input, call int64, out Output) {
	h.AddOp(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: h.Now()})
}

// AddOp records an operation with its own times (hand-made histories).
func (h *History) AddOp(op porcupine.Operation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// Mark records a quiescence point: nothing the engine started before it is
// still running (no connection of the engine's pool is in use, no backend
// of it is busy). An operation whose outcome is unknown may take effect
// after it returned — a combined batch commits after its caller gave up, a
// backend finishes a transaction its client no longer waits for — but not
// after the next quiescence point: that bounds its window.
func (h *History) Mark() {
	now := h.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.marks = append(h.marks, now)
}

// Len is the number of operations recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Operations returns the recorded operations with the windows the check
// uses: an operation whose outcome is unknown returns at the first
// quiescence point after it returned, or after every other operation when
// there is none.
func (h *History) Operations() []porcupine.Operation {
	h.mu.Lock()
	ops := slices.Clone(h.ops)
	marks := slices.Clone(h.marks)
	h.mu.Unlock()
	end := int64(0)
	for _, op := range ops {
		end = max(end, op.Return, op.Call)
	}
	for i := range ops {
		r := ops[i].Output.(Output).Result
		if r != ResUnknown && r != ResUntyped {
			continue
		}
		j, _ := slices.BinarySearch(marks, ops[i].Return)
		if j < len(marks) {
			ops[i].Return = marks[j]
		} else {
			ops[i].Return = end + 1 + int64(i)
		}
	}
	return ops
}

// CheckTimeoutDefault bounds one linearizability check unless
// HOLDFAST_CHECK_TIMEOUT (a Go duration) says otherwise.
const CheckTimeoutDefault = 3 * time.Minute

// ArtifactDir is where failed checks save their histories:
// HOLDFAST_ARTIFACTS when set, else $TMPDIR/holdfast-artifacts.
func ArtifactDir() string {
	if d := os.Getenv("HOLDFAST_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "holdfast-artifacts")
}

// Check checks the history for linearizability against Model. Anything
// but porcupine.Ok is an error: Illegal (a wrong answer) and Unknown (the
// check timed out, so nothing was proven). On an error it saves the history
// (JSON, replayable with HOLDFAST_HISTORY and TestExplainHistory), a text
// dump and, when Illegal, porcupine's visualization under ArtifactDir, and
// names them in the error.
func (h *History) Check(timeout time.Duration) (porcupine.CheckResult, error) {
	return h.CheckNamed("history", timeout)
}

// CheckNamed is Check with the saved files labelled name (a test name).
func (h *History) CheckNamed(name string, timeout time.Duration) (porcupine.CheckResult, error) {
	return CheckOperations(name, h.Operations(), timeout)
}

// CheckOperations is History.Check for a list of operations.
func CheckOperations(name string, ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, error) {
	if v := os.Getenv("HOLDFAST_CHECK_TIMEOUT"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			timeout = d
		}
	}
	m := Model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(m, ops, timeout)
	if res == porcupine.Ok {
		return res, nil
	}
	dir := ArtifactDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("history check %s (and saving it failed: %v)", res, err)
	}
	safe := strings.NewReplacer("/", "_", " ", "_").Replace(name)
	base := filepath.Join(dir, fmt.Sprintf("holdfast-history-%s-%d", safe, time.Now().UnixNano()))
	raw, err := json.Marshal(ops)
	if err != nil {
		return res, fmt.Errorf("history check %s (and saving it failed: %v)", res, err)
	}
	if err := os.WriteFile(base+".json", raw, 0o644); err != nil {
		return res, fmt.Errorf("history check %s (and saving it failed: %v)", res, err)
	}
	replay := fmt.Sprintf("replay: HOLDFAST_HISTORY=%s.json go test -run TestExplainHistory -v ./internal/history/", base)
	if res == porcupine.Unknown {
		return res, fmt.Errorf("history check inconclusive: timed out after %v over %d operations; history saved, %s", timeout, len(ops), replay)
	}
	var b strings.Builder
	single := m
	single.Partition = nil
	for pi, part := range partition(ops) {
		if porcupine.CheckOperations(single, part) {
			continue
		}
		fmt.Fprintf(&b, "partition %d is not linearizable\n", pi)
		slices.SortStableFunc(part, func(a, b porcupine.Operation) int { return cmpInt64(a.Call, b.Call) })
		for _, op := range part {
			fmt.Fprintf(&b, "p%d c%d %d..%d %s\n", pi, op.ClientId, op.Call, op.Return, Model.DescribeOperation(op.Input, op.Output))
		}
	}
	_ = os.WriteFile(base+".txt", []byte(b.String()), 0o644)
	vis := base + ".html"
	if err := porcupine.VisualizePath(m, info, vis); err != nil {
		vis = fmt.Sprintf("(visualization failed: %v)", err)
	}
	return res, fmt.Errorf("history is not linearizable: see %s and %s.txt; %s\n%s", vis, base, replay, explain(info, partition(ops)))
}

// Replay steps the model through the history in call order, as if it were
// sequential, and describes the first operation the model rejects ("" if
// none). For a concurrent history a rejection is only a hint; for a
// sequential one (one worker) it is the violation.
func (h *History) Replay() string {
	ops := h.Operations()
	for _, part := range partition(ops) {
		slices.SortStableFunc(part, func(a, b porcupine.Operation) int {
			if a.Call < b.Call {
				return -1
			}
			if a.Call > b.Call {
				return 1
			}
			return 0
		})
		states := []keyModel{initState()}
		for i, op := range part {
			var next []keyModel
			for _, s := range states {
				next = append(next, step(s, op.Input.(Input), op.Output.(Output))...)
			}
			if len(next) == 0 {
				return fmt.Sprintf("key %d op %d: %s from %s", op.Input.(Input).Key, i,
					Model.DescribeOperation(op.Input, op.Output), describeState(states[0]))
			}
			states = next
		}
	}
	return ""
}

// explain describes, for each partition that could not be linearized, the
// end of its longest partial linearization and the pending operation that
// returned first: where a reader starts looking.
func explain(info porcupine.LinearizationInfo, parts [][]porcupine.Operation) string {
	var b strings.Builder
	for pi, part := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
		states := []keyModel{initState()}
		done := map[porcupine.Operation]bool{}
		var lines []string
		for _, op := range longest {
			var next []keyModel
			for _, s := range states {
				next = append(next, step(s, op.Input.(Input), op.Output.(Output))...)
			}
			states = next
			lines = append(lines, fmt.Sprintf("    [c%d %d..%d] %s", op.ClientId, op.Call, op.Return, Model.DescribeOperation(op.Input, op.Output)))
		}
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		for _, op := range longest {
			done[op] = true
		}
		var pending []porcupine.Operation
		if pi < len(parts) {
			for _, op := range parts[pi] {
				if !done[op] {
					pending = append(pending, op)
				}
			}
		}
		slices.SortFunc(pending, func(a, b porcupine.Operation) int { return int((a.Call - b.Call) >> 32) })
		for i, op := range pending {
			if i == 6 {
				break
			}
			lines = append(lines, fmt.Sprintf("  pending [c%d %d..%d] %s", op.ClientId, op.Call, op.Return, Model.DescribeOperation(op.Input, op.Output)))
		}
		fmt.Fprintf(&b, "partition %d: longest partial linearization %d ops, ending:\n%s\n", pi, len(longest), strings.Join(lines, "\n"))
		for _, s := range states {
			fmt.Fprintf(&b, "    state: %s\n", describeState(s))
		}
	}
	return b.String()
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// LoadOperations reads a history written next to a failed check's
// visualization (the .json file), for offline minimization.
func LoadOperations(path string) ([]porcupine.Operation, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ops []struct {
		ClientId int
		Input    Input
		Call     int64
		Output   Output
		Return   int64
	}
	if err := json.Unmarshal(raw, &ops); err != nil {
		return nil, err
	}
	out := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		out[i] = porcupine.Operation{ClientId: o.ClientId, Input: o.Input, Call: o.Call, Output: o.Output, Return: o.Return}
	}
	return out, nil
}

// Minimize returns a smallest-found subset of a non-linearizable partition
// (greedily dropping operations, but not stock sets and pre-order caps,
// while it stays non-linearizable), in call order, described one operation
// a line. Only a hint: dropping a release or a sweep that gave units back
// can leave a minimum that blames an innocent reservation.
func Minimize(ops []porcupine.Operation) string {
	m := Model.ToModel()
	m.Partition = nil
	var bad []porcupine.Operation
	for _, part := range partition(ops) {
		if !porcupine.CheckOperations(m, part) {
			bad = part
			break
		}
	}
	if bad == nil {
		return "linearizable"
	}
	slices.SortStableFunc(bad, func(a, b porcupine.Operation) int { return cmpInt64(a.Call, b.Call) })
	for i := len(bad) - 1; i >= 0; i-- {
		if op := bad[i].Input.(Input).Op; op == OpSet || op == OpPreorder {
			// A key's stock and its pre-order cap stay: without them
			// every reservation of the key looks wrong.
			continue
		}
		try := slices.Delete(slices.Clone(bad), i, i+1)
		if !porcupine.CheckOperations(m, try) {
			bad = try
		}
	}
	var b strings.Builder
	for _, op := range bad {
		in := op.Input.(Input)
		fmt.Fprintf(&b, "c%d %d..%d now=%d ttl=%d %s\n", op.ClientId, op.Call, op.Return, in.Now, in.TTL, Model.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// Explain checks ops (as LoadOperations reads them) and describes where
// linearization fails ("" when it does not).
func Explain(ops []porcupine.Operation) string {
	m := Model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(m, ops, time.Minute)
	if res != porcupine.Illegal {
		return string(res)
	}
	return explain(info, partition(ops))
}
