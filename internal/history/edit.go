package history

import (
	"slices"

	"github.com/holdfast/holdfast"
)

// OpEdit is an edit of a held checkout (Engine.Edit): Input.CO, the new
// lines (Key and Qty, or Cart), Input.Rev the revision it makes, Input.TTL
// the new TTL (0: keep the expiry), Input.Now. Output.Exp is the answered
// expiry, Output.Replayed a replay.
const OpEdit Op = "edit"

// ResRevisionConflict is holdfast.ErrRevisionConflict.
const ResRevisionConflict = "revisionconflict"

// editExp is the expiry an edit leaves: kept, or now + TTL capped by the
// deadline.
func editExp(h mhold, in Input) int64 {
	if in.TTL == 0 {
		return h.exp
	}
	return min(in.Now+in.TTL, h.deadline)
}

// editFits reports whether every line's growth is sellable: the units the
// hold keeps are its own.
func editFits(s keyModel, h mhold, lines []CartLine) bool {
	for _, l := range lines {
		grow := l.Qty
		for _, o := range h.cart() {
			if o.Key == l.Key {
				grow -= o.Qty
			}
		}
		if grow > 0 && (!s.stocked(l.Key) || s.sellable(l.Key) < grow) {
			return false
		}
	}
	return true
}

// applyEdit is an edit's successful effect; ok is false when it cannot
// succeed from s.
func applyEdit(s keyModel, in Input) (keyModel, bool) {
	h, exists := s.holds[in.CO]
	if !exists || h.status != holdfast.StatusHeld || in.Rev != h.edits+2 || !editFits(s, h, in.Lines()) ||
		s.overLimit(h.buyer, grownLines(h.cart(), in.Lines()), in.CO) {
		return s, false
	}
	h.exp = editExp(h, in)
	h.lines = [CartLinesMax]CartLine{}
	h.n = copy(h.lines[:], in.Lines())
	h.edits++
	h.editTTL = in.TTL
	return s.with(in.CO, h), true
}

// stepEdit is step for an edit with a known answer.
func stepEdit(s keyModel, in Input, out Output) []keyModel {
	h, exists := s.holds[in.CO]
	yes := func(n keyModel) []keyModel { return []keyModel{n} }
	if !exists {
		if out.Result == ResNotFound {
			return yes(s)
		}
		return nil
	}
	switch h.status {
	case holdfast.StatusClaimed:
		if out.Result == ResClaimed {
			return yes(s)
		}
		return nil
	case holdfast.StatusReleased:
		if out.Result == ResReleased {
			return yes(s)
		}
		return nil
	case holdfast.StatusExpired:
		if out.Result == ResExpired {
			return yes(s)
		}
		return nil
	}
	cur := h.edits + 1
	switch {
	case in.Rev == cur:
		// A retry carries the lines and the TTL of the edit that made the
		// revision; other content under it is a conflict (issue #24).
		same := slices.Equal(h.cart(), in.Lines()) && in.TTL == h.editTTL
		if (same && out.Result == ResOK && out.Replayed && out.Exp == h.exp) || (!same && out.Result == ResConflict) {
			return yes(s)
		}
	case in.Rev != cur+1:
		if out.Result == ResRevisionConflict {
			return yes(s)
		}
	case out.Result == ResBuyerLimit:
		// Only an edit that grows a key past the buyer's limit.
		if s.overLimit(h.buyer, grownLines(h.cart(), in.Lines()), in.CO) {
			return yes(s)
		}
	case out.Result == ResInsufficient:
		if !in.Strict || !editFits(s, h, in.Lines()) {
			return yes(s)
		}
	case out.Result == ResOK && out.Exp == editExp(h, in):
		if n, ok := applyEdit(s, in); ok {
			return yes(n)
		}
	}
	return nil
}
