package history_test

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/holdfast/holdfast/internal/history"
)

func editOp(co, rev int, ttl int64, now int64, lines ...history.CartLine) history.Input {
	in := history.Input{Op: history.OpEdit, CO: co, Rev: int64(rev), TTL: ttl, Now: now, Strict: true}
	in.NCart = copy(in.Cart[:], lines)
	in.Key, in.Qty = lines[0].Key, lines[0].Qty
	return in
}

// TestModelRejectsWrongEdits: the model's edits (OpEdit) reject the wrong
// answers an engine could give and accept their legal twins.
func TestModelRejectsWrongEdits(t *testing.T) {
	t.Setenv("HOLDFAST_ARTIFACTS", t.TempDir())
	edited := func(exp int64) history.Output { return history.Output{Result: history.ResOK, Exp: exp} }
	level := func(key, a, h int) (history.Input, history.Output) {
		return history.Input{Op: history.OpLevel, Key: key}, history.Output{Result: history.ResOK, Available: a, Held: h}
	}
	cases := []struct {
		name      string
		bad, good *hist
	}{{
		name: "an edit grew past the stock",
		bad:  new(hist).seq(set(0, 4), ok).seq(reserve(1, line(0, 2)), held).seq(reserve(2, line(0, 1)), held).seq(editOp(1, 2, 0, 0, line(0, 4)), edited(15*minute)),
		good: new(hist).seq(set(0, 4), ok).seq(reserve(1, line(0, 2)), held).seq(reserve(2, line(0, 1)), held).seq(editOp(1, 2, 0, 0, line(0, 3)), edited(15*minute)),
	}, {
		name: "a refused edit gave up the units the hold keeps",
		bad: func() *hist {
			h := new(hist).seq(set(0, 3), ok).seq(reserve(1, line(0, 2)), held).seq(editOp(1, 2, 0, 0, line(0, 4)), soldOut)
			i, o := level(0, 3, 0)
			return h.seq(i, o)
		}(),
		good: func() *hist {
			h := new(hist).seq(set(0, 3), ok).seq(reserve(1, line(0, 2)), held).seq(editOp(1, 2, 0, 0, line(0, 4)), soldOut)
			i, o := level(0, 3, 2)
			return h.seq(i, o)
		}(),
	}, {
		name: "a stale revision applied",
		bad:  new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 3, 0, 0, line(0, 2)), edited(15*minute)),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 3, 0, 0, line(0, 2)), history.Output{Result: history.ResRevisionConflict}),
	}, {
		name: "an edit with a TTL kept the expiry",
		bad:  new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 2, 30*minute, minute, line(0, 2)), edited(15*minute)),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 2, 30*minute, minute, line(0, 2)), edited(31*minute)),
	}, {
		name: "a claim after an edit deducted the old lines",
		bad: func() *hist {
			h := new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 2, 0, 0, line(0, 3)), edited(15*minute)).
				seq(onCO(history.OpClaim, 1, 0), claimed)
			i, o := level(0, 4, 0)
			return h.seq(i, o)
		}(),
		good: func() *hist {
			h := new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 2, 0, 0, line(0, 3)), edited(15*minute)).
				seq(onCO(history.OpClaim, 1, 0), claimed)
			i, o := level(0, 2, 0)
			return h.seq(i, o)
		}(),
	}, {
		name: "a retried edit answered a conflict",
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 2, 0, 0, line(0, 2)), edited(15*minute)).
			seq(editOp(1, 2, 0, 0, line(0, 2)), history.Output{Result: history.ResConflict}),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 2, 0, 0, line(0, 2)), edited(15*minute)).
			seq(editOp(1, 2, 0, 0, line(0, 2)), history.Output{Result: history.ResOK, Exp: 15 * minute, Replayed: true}),
	}, {
		name: "an edit at the current revision with a new TTL answered a replay (#24)",
		bad: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 2, 0, 0, line(0, 2)), edited(15*minute)).
			seq(editOp(1, 2, 30*minute, minute, line(0, 2)), history.Output{Result: history.ResOK, Exp: 15 * minute, Replayed: true}),
		good: new(hist).seq(set(0, 5), ok).seq(reserve(1, line(0, 1)), held).seq(editOp(1, 2, 0, 0, line(0, 2)), edited(15*minute)).
			seq(editOp(1, 2, 30*minute, minute, line(0, 2)), history.Output{Result: history.ResConflict}),
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
