package history_test

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

func preorderOp(key, capUnits int) history.Input {
	return history.Input{Op: history.OpPreorder, Key: key, Delta: capUnits}
}

// pre is a reservation's answer with p units pre-ordered.
func pre(p int) history.Output {
	return history.Output{Result: history.ResOK, Exp: 15 * minute, Preordered: p}
}

func adjust(key, delta int) history.Input {
	return history.Input{Op: history.OpAdjust, Key: key, Delta: delta}
}

// TestModelRejectsWrongPreorders: pre-orders in the model (preorder.go) —
// a reservation short on a key with a cap holds the rest on the headroom,
// only while stock + headroom allow it and only when stock is short; owed
// units count against the cap until stock arrives — reject the wrong
// answers an engine could give and accept their legal twins.
func TestModelRejectsWrongPreorders(t *testing.T) {
	insufficient := history.Output{Result: history.ResInsufficient}
	// Key 0: 2 in stock, a pre-order cap of 3.
	base := func() *hist { return new(hist).seq(set(0, 2), ok).seq(preorderOp(0, 3), ok) }
	// co1 holds all of it: 2 in stock, 3 pre-ordered.
	full := func() *hist { return base().seq(reserve(1, line(0, 5)), pre(3)) }
	// ... and claimed: 3 owed, the key's available 0.
	owed := func() *hist { return full().seq(onCO(history.OpClaim, 1, 0), claimed) }
	cases := []struct {
		name      string
		bad, good *hist
	}{{
		name: "a pre-order acknowledged past the cap",
		bad:  base().seq(reserve(1, line(0, 6)), pre(4)),
		good: base().seq(reserve(1, line(0, 6)), insufficient),
	}, {
		name: "a line's in-stock part beyond the stock",
		bad:  base().seq(reserve(1, line(0, 5)), pre(2)),
		good: base().seq(reserve(1, line(0, 5)), pre(3)),
	}, {
		name: "a pre-ordered line beyond stock + cap, over two reservations",
		bad:  full().seq(reserve(2, line(0, 1)), pre(1)),
		good: full().seq(reserve(2, line(0, 1)), insufficient),
	}, {
		name: "a reservation answered pre-ordered while stock covered it",
		bad:  base().seq(reserve(1, line(0, 2)), pre(1)),
		good: base().seq(reserve(1, line(0, 2)), pre(0)),
	}, {
		name: "sold out while the headroom had units",
		bad:  base().seq(reserve(1, line(0, 4)), insufficient),
		good: base().seq(reserve(1, line(0, 4)), pre(2)),
	}, {
		name: "claimed pre-ordered units stop counting against the cap",
		bad:  owed().seq(onCO(history.OpRelease, 1, 0), history.Output{Result: history.ResClaimed}).seq(reserve(2, line(0, 1)), pre(1)),
		good: owed().seq(onCO(history.OpRelease, 1, 0), history.Output{Result: history.ResClaimed}).seq(reserve(2, line(0, 1)), insufficient),
	}, {
		name: "a released pre-order did not give its headroom back",
		bad:  full().seq(onCO(history.OpRelease, 1, 0), released).seq(reserve(2, line(0, 5)), insufficient),
		good: full().seq(onCO(history.OpRelease, 1, 0), released).seq(reserve(2, line(0, 5)), pre(3)),
	}, {
		name: "an expired pre-order did not give its headroom back",
		bad:  full().seq(sweepAt(16*minute), ok).seq(reserveAt(2, 16*minute, line(0, 3)), insufficient),
		good: full().seq(sweepAt(16*minute), ok).seq(reserveAt(2, 16*minute, line(0, 3)), history.Output{Result: history.ResOK, Exp: 31 * minute, Preordered: 1}),
	}, {
		name: "a hold read hides the pre-ordered units",
		bad:  full().seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusHeld, Exp: 15 * minute}),
		good: full().seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusHeld, Exp: 15 * minute, Preordered: 3}),
	}, {
		name: "a replay answered other pre-ordered units",
		bad:  full().seq(reserve(1, line(0, 5)), pre(2)),
		good: full().seq(reserve(1, line(0, 5)), pre(3)),
	}, {
		name: "arriving stock converted more than was owed",
		bad:  owed().seq(adjust(0, 5), history.Output{Result: history.ResOK, Available: 1}),
		good: owed().seq(adjust(0, 5), history.Output{Result: history.ResOK, Available: 2}),
	}, {
		name: "converted units not given back to the headroom",
		bad: owed().seq(adjust(0, 5), history.Output{Result: history.ResOK, Available: 2}).
			seq(reserve(2, line(0, 5)), insufficient),
		good: owed().seq(adjust(0, 5), history.Output{Result: history.ResOK, Available: 2}).
			seq(reserve(2, line(0, 5)), pre(3)),
	}, {
		name: "a cap below what is outstanding acknowledged",
		bad:  full().seq(preorderOp(0, 2), ok),
		good: full().seq(preorderOp(0, 2), history.Output{Result: history.ResInvalid}),
	}}
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

func reserveAt(co int, now int64, lines ...history.CartLine) history.Input {
	in := reserve(co, lines...)
	in.Now = now
	return in
}

// TestMinimizeKeepsPreorderCaps: Minimize keeps a key's pre-order setting
// (as it keeps its stock): without it every pre-ordered answer is wrong,
// and the minimum blamed an innocent reservation (seen minimizing a
// HistoryPreorder failure: "reserve ... preordered=2" against cap 0).
func TestMinimizeKeepsPreorderCaps(t *testing.T) {
	// Key 0: 2 in stock, cap 3; co1 takes all of it, co2 pre-orders past the cap.
	// Lenient, as HistoryPreorder records them.
	lenient := func(in history.Input) history.Input { in.Strict = false; return in }
	h := new(hist).seq(set(0, 2), ok).seq(preorderOp(0, 3), ok).
		seq(lenient(reserve(1, line(0, 5))), pre(3)).seq(lenient(reserve(2, line(0, 1))), pre(1))
	got := history.Minimize(h.ops)
	if !strings.Contains(got, "preorder(key0 cap 3)") || !strings.Contains(got, "co2") {
		t.Fatalf("minimized without the cap or the wrong answer:\n%s", got)
	}
}
