package history_test

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// The model's self-tests: hand-made histories, each a wrong answer the
// engine could give, must be rejected (Illegal), and their legal twins
// accepted. A checker that accepts everything fails here.

const (
	minute = int64(time.Minute / time.Microsecond)
	hour   = int64(time.Hour / time.Microsecond)
)

// hist builds a history of sequential or overlapping operations.
type hist struct{ ops []porcupine.Operation }

// at adds an operation called at call and returning at ret.
func (h *hist) at(call, ret int64, in history.Input, out history.Output) *hist {
	h.ops = append(h.ops, porcupine.Operation{ClientId: len(h.ops), Input: in, Call: call, Output: out, Return: ret})
	return h
}

// seq adds an operation after every one so far.
func (h *hist) seq(in history.Input, out history.Output) *hist {
	t := int64(0)
	for _, op := range h.ops {
		t = max(t, op.Return)
	}
	return h.at(t+1, t+2, in, out)
}

func set(key, n int) history.Input { return history.Input{Op: history.OpSet, Key: key, Delta: n} }

func reserve(co int, lines ...history.CartLine) history.Input {
	in := history.Input{Op: history.OpReserve, CO: co, TTL: 15 * minute, Life: hour, Strict: true}
	in.NCart = copy(in.Cart[:], lines)
	in.Key, in.Qty = lines[0].Key, lines[0].Qty
	return in
}

func onCO(op history.Op, co int, keys ...int) history.Input {
	in := history.Input{Op: op, CO: co, Strict: true}
	for i, k := range keys {
		in.Cart[i] = history.CartLine{Key: k}
	}
	in.NCart = len(keys)
	in.Key = keys[0]
	return in
}

func line(key, qty int) history.CartLine { return history.CartLine{Key: key, Qty: qty} }

var (
	ok       = history.Output{Result: history.ResOK}
	held     = history.Output{Result: history.ResOK, Exp: 15 * minute}
	claimed  = history.Output{Result: history.ResOK, Status: holdfast.StatusClaimed}
	released = history.Output{Result: history.ResOK, Status: holdfast.StatusReleased}
	soldOut  = history.Output{Result: history.ResInsufficient}
	expired  = history.Output{Result: history.ResExpired}
	unknown  = history.Output{Result: history.ResUnknown}
)

func levelOp(key, avail, heldUnits int) (history.Input, history.Output) {
	return history.Input{Op: history.OpLevel, Key: key}, history.Output{Result: history.ResOK, Available: avail, Held: heldUnits}
}

func sweepAt(now int64) history.Input {
	return history.Input{Op: history.OpSweep, Key: -1, Now: now}
}

func TestModelRejectsWrongAnswers(t *testing.T) {
	t.Setenv("HOLDFAST_ARTIFACTS", t.TempDir()) // the rejected histories' files
	lv := func(key, a, h int) (history.Input, history.Output) { return levelOp(key, a, h) }
	cases := []struct {
		name string
		bad  *hist // must be Illegal
		good *hist // its legal twin: must be Ok
	}{{
		name: "oversell: two holds beyond stock",
		bad:  new(hist).seq(set(0, 3), ok).seq(reserve(1, line(0, 2)), held).seq(reserve(2, line(0, 2)), held),
		good: new(hist).seq(set(0, 4), ok).seq(reserve(1, line(0, 2)), held).seq(reserve(2, line(0, 2)), held),
	}, {
		name: "oversell: concurrent holds beyond stock",
		bad: new(hist).seq(set(0, 3), ok).at(10, 20, reserve(1, line(0, 2)), held).
			at(11, 21, reserve(2, line(0, 2)), held),
		good: new(hist).seq(set(0, 3), ok).at(10, 20, reserve(1, line(0, 2)), held).
			at(11, 21, reserve(2, line(0, 2)), soldOut),
	}, {
		name: "oversell: claimed more than available",
		bad: func() *hist {
			h := new(hist).seq(set(0, 2), ok).seq(reserve(1, line(0, 2)), held).
				seq(history.Input{Op: history.OpAdjust, Key: 0, Delta: -1}, history.Output{Result: history.ResOK, Available: 1, Held: 2})
			return h.seq(onCO(history.OpClaim, 1, 0), claimed)
		}(),
		good: func() *hist {
			h := new(hist).seq(set(0, 2), ok).seq(reserve(1, line(0, 2)), held).
				seq(history.Input{Op: history.OpAdjust, Key: 0, Delta: -1}, history.Output{Result: history.ResOK, Available: 1, Held: 2})
			return h.seq(onCO(history.OpClaim, 1, 0), history.Output{Result: history.ResOverCommitted})
		}(),
	}, {
		name: "double claim with different outcomes",
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).
			seq(onCO(history.OpClaim, 1, 0), claimed).seq(onCO(history.OpClaim, 1, 0), history.Output{Result: history.ResReleased}),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).
			seq(onCO(history.OpClaim, 1, 0), claimed).seq(onCO(history.OpClaim, 1, 0), claimed),
	}, {
		name: "double claim: claimed, then expired",
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).
			seq(onCO(history.OpClaim, 1, 0), claimed).seq(sweepAt(20*minute), ok).seq(onCO(history.OpClaim, 1, 0), expired),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).
			seq(onCO(history.OpClaim, 1, 0), claimed).seq(sweepAt(20*minute), ok).seq(onCO(history.OpClaim, 1, 0), claimed),
	}, {
		name: "lost hold: acknowledged, unexpired, claim says not found",
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).
			seq(onCO(history.OpClaim, 1, 0), history.Output{Result: history.ResNotFound}),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).
			seq(onCO(history.OpClaim, 1, 0), claimed),
	}, {
		name: "lost hold: acknowledged, unexpired, claim says expired",
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(sweepAt(10*minute), ok).
			seq(onCO(history.OpClaim, 1, 0), expired),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(sweepAt(10*minute), ok).
			seq(onCO(history.OpClaim, 1, 0), claimed),
	}, {
		name: "lost hold: a read says released",
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).
			seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusReleased}),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).
			seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusHeld, Exp: 15 * minute}),
	}, {
		name: "false sold out: stock was there the whole window",
		bad:  new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(reserve(2, line(0, 3)), soldOut),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 3)), held).seq(reserve(2, line(0, 3)), soldOut),
	}, {
		name: "false sold out: a concurrent release makes the window's end sellable, not its start",
		// Legal both ways: the bad twin has the release finish before
		// the reserve started.
		bad: new(hist).seq(set(0, 3), ok).seq(reserve(1, line(0, 3)), held).
			at(100, 110, onCO(history.OpRelease, 1, 0), released).at(120, 130, reserve(2, line(0, 3)), soldOut),
		good: new(hist).seq(set(0, 3), ok).seq(reserve(1, line(0, 3)), held).
			at(100, 130, onCO(history.OpRelease, 1, 0), released).at(110, 140, reserve(2, line(0, 3)), soldOut),
	}, {
		name: "false sold out is not checked on a lenient (pool) key",
		// The legal twin: the same answer without Input.Strict.
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(reserve(2, line(0, 3)), soldOut),
		good: func() *hist {
			in := reserve(2, line(0, 3))
			in.Strict = false
			return new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(in, soldOut)
		}(),
	}, {
		name: "false hold_expired on a late claim while stock was sellable",
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(sweepAt(20*minute), ok).
			seq(onCO(history.OpClaim, 1, 0), expired),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(sweepAt(20*minute), ok).
			seq(reserve(2, line(0, 4)), held).seq(onCO(history.OpClaim, 1, 0), expired),
	}, {
		name: "partial cart: a two-key cart answered sold out, one line held",
		bad: func() *hist {
			h := new(hist).seq(set(0, 5), ok).seq(set(1, 1), ok).seq(reserve(1, line(0, 2), line(1, 2)), soldOut)
			i, o := lv(0, 5, 2)
			return h.seq(i, o)
		}(),
		good: func() *hist {
			h := new(hist).seq(set(0, 5), ok).seq(set(1, 1), ok).seq(reserve(1, line(0, 2), line(1, 2)), soldOut)
			i, o := lv(0, 5, 0)
			return h.seq(i, o)
		}(),
	}, {
		name: "partial cart: a two-key cart held with one key short",
		bad:  new(hist).seq(set(0, 5), ok).seq(set(1, 1), ok).seq(reserve(1, line(0, 2), line(1, 2)), held),
		good: new(hist).seq(set(0, 5), ok).seq(set(1, 2), ok).seq(reserve(1, line(0, 2), line(1, 2)), held),
	}, {
		name: "partial cart: claim of a two-key cart deducted one key only",
		bad: func() *hist {
			h := new(hist).seq(set(0, 5), ok).seq(set(1, 5), ok).seq(reserve(1, line(0, 2), line(1, 2)), held).
				seq(onCO(history.OpClaim, 1, 0, 1), claimed)
			i, o := lv(1, 5, 0)
			return h.seq(i, o)
		}(),
		good: func() *hist {
			h := new(hist).seq(set(0, 5), ok).seq(set(1, 5), ok).seq(reserve(1, line(0, 2), line(1, 2)), held).
				seq(onCO(history.OpClaim, 1, 0, 1), claimed)
			i, o := lv(1, 3, 0)
			return h.seq(i, o)
		}(),
	}, {
		name: "sweep expired an unexpired hold",
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(sweepAt(10*minute), ok).
			seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusExpired}),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(sweepAt(20*minute), ok).
			seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusExpired}),
	}, {
		name: "concurrent sweep skipped a hold nothing else touched",
		bad: func() *hist {
			in := sweepAt(20 * minute)
			in.Partial = true
			in.Skip[0], in.NSkip = 2, 1
			return new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(in, ok).
				seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusHeld, Exp: 15 * minute})
		}(),
		good: func() *hist {
			in := sweepAt(20 * minute)
			in.Partial = true
			in.Skip[0], in.NSkip = 1, 1
			return new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 2)), held).seq(in, ok).
				seq(onCO(history.OpHold, 1, 0), history.Output{Result: history.ResOK, Status: holdfast.StatusHeld, Exp: 15 * minute})
		}(),
	}, {
		name: "unknown outcome: the effect shows after its window closed",
		// A reserve with an unknown outcome may take effect until the
		// next quiescence point, not after a read that followed it.
		bad: new(hist).seq(set(0, 5), ok).at(10, 20, reserve(1, line(0, 2)), unknown).
			at(30, 40, func() history.Input { i, _ := lv(0, 0, 0); return i }(), history.Output{Result: history.ResOK, Available: 5, Held: 0}).
			at(50, 60, func() history.Input { i, _ := lv(0, 0, 0); return i }(), history.Output{Result: history.ResOK, Available: 5, Held: 2}),
		good: new(hist).seq(set(0, 5), ok).at(10, 20, reserve(1, line(0, 2)), unknown).
			at(30, 40, func() history.Input { i, _ := lv(0, 0, 0); return i }(), history.Output{Result: history.ResOK, Available: 5, Held: 2}).
			at(50, 60, func() history.Input { i, _ := lv(0, 0, 0); return i }(), history.Output{Result: history.ResOK, Available: 5, Held: 2}),
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

// An unknown outcome is not a verdict: a history the checker cannot decide
// in time fails the check, and the history is saved for replay.
func TestModelInconclusiveFails(t *testing.T) {
	t.Setenv("HOLDFAST_ARTIFACTS", t.TempDir())
	// Many overlapping unknown reservations: more linearizations than a
	// nanosecond allows.
	h := new(hist).seq(set(0, 1000), ok)
	for i := range 200 {
		h.at(10+int64(i), 10000, reserve(i+1, line(0, 1)), unknown)
	}
	res, err := history.CheckOperations("selftest-timeout", h.ops, time.Nanosecond)
	if res != porcupine.Unknown || err == nil {
		t.Fatalf("check with a 1ns budget: %s, %v; want Unknown and an error", res, err)
	}
	if !strings.Contains(err.Error(), "HOLDFAST_HISTORY=") {
		t.Errorf("inconclusive check without a saved history to replay: %v", err)
	}
	t.Log(err)
}
