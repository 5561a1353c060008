package history

import (
	"maps"
	"slices"

	"github.com/holdfast/holdfast"
)

// Merges, buyers and bundles in the model (issue #30: every feature that
// changes hold state is in the checker).
//
// A merge (Engine.MergeCheckouts) is OpMerge: Input.CO is the source,
// Input.Into the destination, Input.Cart carries keys of both checkouts
// (for the partition only). Its effect: the source ends released, merged
// into the destination; the destination holds the sum of both carts per key
// (keeping its expiry, deadline and buyer; a new revision), or, absent, is
// created with the source's lines, expiry, deadline and buyer. The answer
// is the destination's hold: Output.Lines, Output.Exp, Output.Status.
//
// Buyers: Input.Buyer names a reservation's buyer (0: none); OpLimit sets
// a key's per-buyer limit (Input.Delta). A buyer's units of a key are its
// held holds' (lapsed ones included) plus its claims' (the limit's window
// is 0: every claim counts). A reserve, an edit that grows a key, a late
// claim and a merge into a named buyer's hold are refused past the limit
// (ResBuyerLimit) and must not be acknowledged past it.
//
// Bundles are reserved as their components: the recorder expands a bundle
// line with its own copy of the definition, so the model's cart is the
// components and Output.Lines (the hold's answered lines) must be exactly
// that cart — a hold that took some components only, or the bundle's item
// itself, is a wrong answer. Input.Bundle only labels the operation.

// OpMerge and OpLimit: see above.
const (
	OpMerge Op = "merge"
	OpLimit Op = "limit"
)

// ResBuyerLimit is holdfast.ErrBuyerLimitExceeded. A merge refused for its
// destination (a *holdfast.MergeIntoError) is ResIntoPrefix followed by the
// destination's result: "into:claimed", "into:released", "into:expired".
const (
	ResBuyerLimit = "buyerlimit"
	ResIntoPrefix = "into:"
)

// lapsed reports whether a held hold is past its expiry at in.Now (valid up
// to and including its expiry instant): it answers merges as expired.
func lapsed(h mhold, in Input) bool { return h.status == holdfast.StatusHeld && in.Now > h.exp }

// mergeStatus is the result a merge answers for a hold (source or
// destination) that cannot take part; "" when it is held and not lapsed.
func mergeStatus(h mhold, in Input) string {
	switch {
	case h.status == holdfast.StatusClaimed:
		return ResClaimed
	case h.status == holdfast.StatusReleased:
		return ResReleased
	case h.status == holdfast.StatusExpired, lapsed(h, in):
		return ResExpired
	}
	return ""
}

// sumLines is dst's lines plus src's, per key, in key order (as the
// engine's SumLines orders a merged cart).
func sumLines(dst, src []CartLine) []CartLine {
	out := slices.Clone(dst)
	for _, l := range src {
		if i := slices.IndexFunc(out, func(o CartLine) bool { return o.Key == l.Key }); i >= 0 {
			out[i].Qty += l.Qty
		} else {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b CartLine) int { return a.Key - b.Key })
	return out
}

// buyerUnits is buyer b's units of key k in holds still held and claims,
// the checkouts in except excluded.
func (s keyModel) buyerUnits(b, k int, except ...int) int {
	n := 0
	for co, h := range s.holds {
		if h.buyer != b || slices.Contains(except, co) || (h.status != holdfast.StatusHeld && h.status != holdfast.StatusClaimed) {
			continue
		}
		for _, l := range h.cart() {
			if l.Key == k {
				n += l.Qty
			}
		}
	}
	return n
}

// overLimit reports whether lines (the whole of each key's quantity) would
// take buyer b past a key's limit, the checkouts in except not counted; a
// buyer of 0 (none) is never limited.
func (s keyModel) overLimit(b int, lines []CartLine, except ...int) bool {
	if b == 0 {
		return false
	}
	for _, l := range lines {
		if lim, ok := s.limits[l.Key]; ok && s.buyerUnits(b, l.Key, except...)+l.Qty > lim {
			return true
		}
	}
	return false
}

// grownLines is the lines of want whose key an edit grows past held.
func grownLines(held, want []CartLine) []CartLine {
	var out []CartLine
	for _, l := range want {
		i := slices.IndexFunc(held, func(o CartLine) bool { return o.Key == l.Key })
		if i < 0 || held[i].Qty < l.Qty {
			out = append(out, l)
		}
	}
	return out
}

func (s keyModel) withLimit(k, lim int) keyModel {
	n := keyModel{avail: s.avail, holds: s.holds, limits: maps.Clone(s.limits), caps: s.caps, drops: s.drops}
	if n.limits == nil {
		n.limits = map[int]int{}
	}
	n.limits[k] = lim
	return n
}

// applyMerge is a merge's successful effect; ok is false when it cannot
// succeed from s.
func applyMerge(s keyModel, in Input) (keyModel, bool) {
	src, ok := s.holds[in.CO]
	if !ok || mergeStatus(src, in) != "" {
		return s, false
	}
	dst, exists := s.holds[in.Into]
	if exists && (mergeStatus(dst, in) != "" || s.overLimit(dst.buyer, sumLines(dst.cart(), src.cart()), in.CO, in.Into)) {
		return s, false
	}
	if !exists {
		dst = mhold{status: holdfast.StatusHeld, exp: src.exp, deadline: src.deadline, buyer: src.buyer}
	} else {
		dst.edits++
		dst.editTTL = 0
	}
	sum := sumLines(dst.cart(), src.cart())
	dst.lines = [CartLinesMax]CartLine{}
	dst.n = copy(dst.lines[:], sum)
	src.status = holdfast.StatusReleased
	src.into = in.Into + 1
	return s.with(in.CO, src).with(in.Into, dst), true
}

// answers reports whether out is what the engine answers for hold h at
// in.Now: its status (a lapsed hold reads as expired), its lines and,
// while held, its expiry.
func answers(h mhold, in Input, out Output) bool {
	st := out.Status == h.status || (out.Status == holdfast.StatusExpired && lapsed(h, in))
	return st && slices.Equal(out.Lines[:out.NLines], h.cart()) &&
		(h.status != holdfast.StatusHeld || out.Exp == h.exp)
}

// stepMerge is step for a merge with a known answer.
func stepMerge(s keyModel, in Input, out Output) []keyModel {
	yes := func(n keyModel) []keyModel { return []keyModel{n} }
	src, ok := s.holds[in.CO]
	if !ok {
		if out.Result == ResNotFound {
			return yes(s)
		}
		return nil
	}
	if out.Result == ResOK && out.Replayed {
		// A retry of this merge: answered with the destination as it is.
		// When the model has not merged yet, this call did (its first
		// attempt committed, the answer was lost).
		n := s
		if src.status != holdfast.StatusReleased || src.into != in.Into+1 {
			var ok bool
			if n, ok = applyMerge(s, in); !ok {
				return nil
			}
		}
		if answers(n.holds[in.Into], in, out) {
			return yes(n)
		}
		return nil
	}
	if src.status == holdfast.StatusReleased && src.into == in.Into+1 {
		return nil // merged already: only a replay is right
	}
	if st := mergeStatus(src, in); st != "" {
		if out.Result == st {
			return yes(s)
		}
		return nil
	}
	dst, exists := s.holds[in.Into]
	if exists {
		if st := mergeStatus(dst, in); st != "" {
			if out.Result == ResIntoPrefix+st {
				return yes(s)
			}
			return nil
		}
		if s.overLimit(dst.buyer, sumLines(dst.cart(), src.cart()), in.CO, in.Into) {
			if out.Result == ResBuyerLimit {
				return yes(s)
			}
			return nil
		}
	}
	if out.Result != ResOK {
		return nil
	}
	n, _ := applyMerge(s, in)
	if answers(n.holds[in.Into], in, out) {
		return yes(n)
	}
	return nil
}
