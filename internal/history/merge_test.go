package history_test

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

func mergeOp(from, into int, now int64, keys ...int) history.Input {
	in := history.Input{Op: history.OpMerge, CO: from, Into: into, Now: now, Strict: true}
	for i, k := range keys {
		in.Cart[i] = history.CartLine{Key: k}
	}
	in.NCart = len(keys)
	in.Key = keys[0]
	return in
}

// merged is a merge's (or reserve's) answer: the hold's status, expiry and
// lines.
func merged(st holdfast.Status, exp int64, lines ...history.CartLine) history.Output {
	out := history.Output{Result: history.ResOK, Status: st, Exp: exp}
	out.NLines = copy(out.Lines[:], lines)
	return out
}

// bundleReserve is a reservation of n bundles, each one of key 0 and two
// of key 1: recorded as its components.
func bundleReserve(co, n int) history.Input {
	in := reserve(co, line(0, n), line(1, 2*n))
	in.Bundle = n
	return in
}

func buyerReserve(co, buyer int, lines ...history.CartLine) history.Input {
	in := reserve(co, lines...)
	in.Buyer = buyer
	return in
}

func limitOp(key, n int) history.Input { return history.Input{Op: history.OpLimit, Key: key, Delta: n} }

func levelIs(key, a, h int) (history.Input, history.Output) {
	return history.Input{Op: history.OpLevel, Key: key}, history.Output{Result: history.ResOK, Available: a, Held: h}
}

// TestModelRejectsWrongMerges: merges (OpMerge) in the model — each
// acknowledged answer must be the destination holding both carts, the
// source released and merged into it for good, within the destination
// buyer's limits — reject the wrong answers an engine could give and
// accept their legal twins.
func TestModelRejectsWrongMerges(t *testing.T) {
	// Two checkouts: co1 holds 2 of key 0 (15 min), co2 holds 1 of key 1
	// (30 min), both of 10.
	two := func() *hist {
		long := reserve(2, line(1, 1))
		long.TTL = 30 * minute
		return new(hist).seq(set(0, 10), ok).seq(set(1, 10), ok).seq(reserve(1, line(0, 2)), held).
			seq(long, history.Output{Result: history.ResOK, Exp: 30 * minute})
	}
	both := merged(holdfast.StatusHeld, 30*minute, line(0, 2), line(1, 1))
	lv := func(h *hist, key, a, held int) *hist { i, o := levelIs(key, a, held); return h.seq(i, o) }
	cases := []struct {
		name      string
		bad, good *hist
	}{{
		name: "a merge acknowledged, the source still claimable",
		bad:  two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(onCO(history.OpClaim, 1, 0), claimed),
		good: two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(onCO(history.OpClaim, 1, 0), history.Output{Result: history.ResReleased}),
	}, {
		name: "a merge acknowledged, the source still releases its units",
		bad: lv(two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(onCO(history.OpRelease, 1, 0), released),
			0, 10, 0),
		good: lv(two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(onCO(history.OpRelease, 1, 0), released),
			0, 10, 2),
	}, {
		name: "a merge answered without the source's line",
		bad:  two().seq(mergeOp(1, 2, 0, 0, 1), merged(holdfast.StatusHeld, 30*minute, line(1, 1))),
		good: two().seq(mergeOp(1, 2, 0, 0, 1), both),
	}, {
		name: "a merge lost a line: the destination's claim took only its own",
		bad:  lv(two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(onCO(history.OpClaim, 2, 1), claimed), 0, 10, 0),
		good: lv(two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(onCO(history.OpClaim, 2, 1), claimed), 0, 8, 0),
	}, {
		name: "a merge doubled the units it moved",
		bad:  lv(two().seq(mergeOp(1, 2, 0, 0, 1), both), 0, 10, 4),
		good: lv(two().seq(mergeOp(1, 2, 0, 0, 1), both), 0, 10, 2),
	}, {
		name: "a merge into a held checkout gave it the source's expiry",
		bad:  two().seq(mergeOp(1, 2, 0, 0, 1), merged(holdfast.StatusHeld, 15*minute, line(0, 2), line(1, 1))),
		good: two().seq(mergeOp(1, 2, 0, 0, 1), both),
	}, {
		name: "a merge into an absent checkout did not create it with the source's lines and expiry",
		bad:  two().seq(mergeOp(1, 3, 0, 0), merged(holdfast.StatusHeld, 30*minute, line(0, 2))),
		good: two().seq(mergeOp(1, 3, 0, 0), merged(holdfast.StatusHeld, 15*minute, line(0, 2))).
			seq(onCO(history.OpClaim, 3, 0), claimed),
	}, {
		name: "the same merge acknowledged twice as new",
		bad:  two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(mergeOp(1, 2, 0, 0, 1), both),
		good: two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(mergeOp(1, 2, 0, 0, 1), func() history.Output { o := both; o.Replayed = true; return o }()),
	}, {
		name: "a merged source merged again elsewhere",
		bad:  two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(mergeOp(1, 3, 0, 0), merged(holdfast.StatusHeld, 15*minute, line(0, 2))),
		good: two().seq(mergeOp(1, 2, 0, 0, 1), both).seq(mergeOp(1, 3, 0, 0), history.Output{Result: history.ResReleased}),
	}, {
		name: "a read of the merged source does not name its destination",
		bad: two().seq(mergeOp(1, 2, 0, 0, 1), both).
			seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusReleased}),
		good: two().seq(mergeOp(1, 2, 0, 0, 1), both).
			seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusReleased, Into: 3}),
	}, {
		name: "a lapsed source merged",
		bad:  two().seq(mergeOp(1, 2, 20*minute, 0, 1), both),
		good: two().seq(mergeOp(1, 2, 20*minute, 0, 1), history.Output{Result: history.ResExpired}),
	}, {
		name: "a source merged at its expiry instant answered expired",
		bad:  two().seq(mergeOp(1, 2, 15*minute, 0, 1), history.Output{Result: history.ResExpired}),
		good: two().seq(mergeOp(1, 2, 15*minute, 0, 1), both),
	}, {
		name: "a merge into a claimed checkout acknowledged",
		bad:  two().seq(onCO(history.OpClaim, 2, 1), claimed).seq(mergeOp(1, 2, 0, 0, 1), both),
		good: two().seq(onCO(history.OpClaim, 2, 1), claimed).seq(mergeOp(1, 2, 0, 0, 1), history.Output{Result: history.ResIntoPrefix + history.ResClaimed}),
	}, {
		name: "a refused merge (destination released) ended its source",
		bad: two().seq(onCO(history.OpRelease, 2, 1), released).seq(mergeOp(1, 2, 0, 0, 1), history.Output{Result: history.ResIntoPrefix + history.ResReleased}).
			seq(onCO(history.OpClaim, 1, 0), history.Output{Result: history.ResReleased}),
		good: two().seq(onCO(history.OpRelease, 2, 1), released).seq(mergeOp(1, 2, 0, 0, 1), history.Output{Result: history.ResIntoPrefix + history.ResReleased}).
			seq(onCO(history.OpClaim, 1, 0), claimed),
	}, {
		name: "a merge racing a claim of its source: both acknowledged",
		bad:  two().at(100, 200, mergeOp(1, 2, 0, 0, 1), both).at(110, 210, onCO(history.OpClaim, 1, 0), claimed),
		good: two().at(100, 200, mergeOp(1, 2, 0, 0, 1), both).at(110, 210, onCO(history.OpClaim, 1, 0), history.Output{Result: history.ResReleased}),
	}, {
		name: "after a merge, an edit of the destination at its old next revision applied",
		bad: two().seq(mergeOp(1, 2, 0, 0, 1), both).
			seq(editOp(2, 2, 0, 0, line(1, 1)), history.Output{Result: history.ResOK, Exp: 30 * minute}),
		good: two().seq(mergeOp(1, 2, 0, 0, 1), both).
			seq(editOp(2, 2, 0, 0, line(1, 1)), history.Output{Result: history.ResConflict}).
			seq(editOp(2, 3, 0, 0, line(1, 1)), history.Output{Result: history.ResOK, Exp: 30 * minute}),
	}, {
		name: "a merge took the destination's buyer past its limit",
		bad: new(hist).seq(set(0, 10), ok).seq(limitOp(0, 3), ok).seq(buyerReserve(1, 7, line(0, 2)), held).
			seq(reserve(2, line(0, 2)), held).seq(mergeOp(2, 1, 0, 0), merged(holdfast.StatusHeld, 15*minute, line(0, 4))),
		good: new(hist).seq(set(0, 10), ok).seq(limitOp(0, 3), ok).seq(buyerReserve(1, 7, line(0, 2)), held).
			seq(reserve(2, line(0, 2)), held).seq(mergeOp(2, 1, 0, 0), history.Output{Result: history.ResBuyerLimit}),
	}, {
		name: "a merge of one buyer's two carts refused as if counted twice",
		bad: new(hist).seq(set(0, 10), ok).seq(limitOp(0, 3), ok).seq(buyerReserve(1, 7, line(0, 1)), held).
			seq(buyerReserve(2, 7, line(0, 2)), held).seq(mergeOp(1, 2, 0, 0), history.Output{Result: history.ResBuyerLimit}),
		good: new(hist).seq(set(0, 10), ok).seq(limitOp(0, 3), ok).seq(buyerReserve(1, 7, line(0, 1)), held).
			seq(buyerReserve(2, 7, line(0, 2)), held).seq(mergeOp(1, 2, 0, 0), merged(holdfast.StatusHeld, 15*minute, line(0, 3))),
	}, {
		name: "a merge into an absent checkout lost the source's buyer",
		bad: new(hist).seq(set(0, 10), ok).seq(limitOp(0, 3), ok).seq(buyerReserve(1, 7, line(0, 2)), held).
			seq(mergeOp(1, 3, 0, 0), merged(holdfast.StatusHeld, 15*minute, line(0, 2))).seq(buyerReserve(4, 7, line(0, 2)), held),
		good: new(hist).seq(set(0, 10), ok).seq(limitOp(0, 3), ok).seq(buyerReserve(1, 7, line(0, 2)), held).
			seq(mergeOp(1, 3, 0, 0), merged(holdfast.StatusHeld, 15*minute, line(0, 2))).seq(buyerReserve(4, 7, line(0, 2)), history.Output{Result: history.ResBuyerLimit}),
	}, {
		name: "a merge's new destination replayed to a reservation without the source's buyer",
		bad: new(hist).seq(set(0, 10), ok).seq(buyerReserve(1, 7, line(0, 2)), held).
			seq(mergeOp(1, 3, 0, 0), merged(holdfast.StatusHeld, 15*minute, line(0, 2))).
			seq(reserve(3, line(0, 2)), history.Output{Result: history.ResOK, Exp: 15 * minute, Replayed: true}),
		good: new(hist).seq(set(0, 10), ok).seq(buyerReserve(1, 7, line(0, 2)), held).
			seq(mergeOp(1, 3, 0, 0), merged(holdfast.StatusHeld, 15*minute, line(0, 2))).
			seq(reserve(3, line(0, 2)), history.Output{Result: history.ResConflict}),
	}, {
		name: "a retried merge into a lapsed destination answered it held with another expiry",
		bad: two().seq(mergeOp(1, 2, 0, 0, 1), both).
			seq(mergeOp(1, 2, 40*minute, 0, 1), history.Output{Result: history.ResOK, Replayed: true, Status: holdfast.StatusExpired, Exp: 40 * minute,
				Lines: both.Lines, NLines: both.NLines}),
		good: two().seq(mergeOp(1, 2, 0, 0, 1), both).
			seq(mergeOp(1, 2, 40*minute, 0, 1), history.Output{Result: history.ResOK, Replayed: true, Status: holdfast.StatusExpired, Exp: 30 * minute,
				Lines: both.Lines, NLines: both.NLines}),
	}, {
		name: "a reservation past the buyer's limit acknowledged",
		bad:  new(hist).seq(set(0, 10), ok).seq(limitOp(0, 3), ok).seq(buyerReserve(1, 7, line(0, 2)), held).seq(buyerReserve(2, 7, line(0, 2)), held),
		good: new(hist).seq(set(0, 10), ok).seq(limitOp(0, 3), ok).seq(buyerReserve(1, 7, line(0, 2)), held).seq(buyerReserve(2, 8, line(0, 2)), held),
	}}
	runCases(t, cases)
}

// TestModelRejectsWrongBundles: a bundle reservation is its components,
// all or nothing, each against its own stock.
func TestModelRejectsWrongBundles(t *testing.T) {
	stocked := func(k0, k1 int) *hist { return new(hist).seq(set(0, k0), ok).seq(set(1, k1), ok) }
	lv := func(h *hist, key, a, held int) *hist { i, o := levelIs(key, a, held); return h.seq(i, o) }
	full := merged("", 15*minute, line(0, 1), line(1, 2))
	cases := []struct {
		name      string
		bad, good *hist
	}{{
		name: "a bundle answered with some of its components",
		bad:  stocked(5, 5).seq(bundleReserve(1, 1), func() history.Output { o := full; o.NLines = 1; return o }()),
		good: stocked(5, 5).seq(bundleReserve(1, 1), full),
	}, {
		name: "a bundle held some of its components",
		bad:  lv(stocked(5, 5).seq(bundleReserve(1, 1), full), 1, 5, 0),
		good: lv(stocked(5, 5).seq(bundleReserve(1, 1), full), 1, 5, 2),
	}, {
		name: "a refused bundle kept one component",
		bad:  lv(stocked(5, 1).seq(bundleReserve(1, 1), soldOut), 0, 5, 1),
		good: lv(stocked(5, 1).seq(bundleReserve(1, 1), soldOut), 0, 5, 0),
	}, {
		name: "a component oversold through a bundle",
		bad:  stocked(5, 3).seq(reserve(1, line(1, 2)), held).seq(bundleReserve(2, 1), full),
		good: stocked(5, 4).seq(reserve(1, line(1, 2)), held).seq(bundleReserve(2, 1), full),
	}, {
		name: "a bundle and a single-component buyer at once beyond a component's stock",
		bad:  stocked(5, 3).at(100, 200, bundleReserve(1, 1), full).at(110, 210, reserve(2, line(1, 2)), held),
		good: stocked(5, 3).at(100, 200, bundleReserve(1, 1), full).at(110, 210, reserve(2, line(1, 2)), soldOut),
	}, {
		name: "a bundle refused while every component was sellable",
		bad:  stocked(5, 5).seq(reserve(1, line(1, 2)), held).seq(bundleReserve(2, 1), soldOut),
		good: stocked(5, 3).seq(reserve(1, line(1, 2)), held).seq(bundleReserve(2, 1), soldOut),
	}, {
		name: "a bundle's claim deducted one component",
		bad:  lv(stocked(5, 5).seq(bundleReserve(1, 2), held).seq(onCO(history.OpClaim, 1, 0, 1), claimed), 1, 5, 0),
		good: lv(stocked(5, 5).seq(bundleReserve(1, 2), held).seq(onCO(history.OpClaim, 1, 0, 1), claimed), 1, 1, 0),
	}}
	runCases(t, cases)
}

func runCases(t *testing.T, cases []struct {
	name      string
	bad, good *hist
}) {
	t.Helper()
	t.Setenv("HOLDFAST_ARTIFACTS", t.TempDir())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := history.CheckOperations("selftest", c.bad.ops, time.Minute)
			if res != porcupine.Illegal {
				t.Errorf("wrong answers accepted: %s (%v)", res, err)
			} else if !strings.Contains(err.Error(), "not linearizable") {
				t.Errorf("rejection without an explanation: %v", err)
			}
			if res, err := history.CheckOperations("selftest", c.good.ops, time.Minute); res != porcupine.Ok {
				t.Errorf("legal history rejected: %s: %v", res, err)
			}
		})
	}
}
