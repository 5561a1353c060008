package history_test

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// A drop on key 0: its window is [dropStart, dropEnd); entries wait
// dropWait after the draw.
const (
	dropStart = minute
	dropEnd   = 2 * minute
	inWindow  = dropStart + minute/2
	dropWait  = 15 * minute
)

func dropOp() history.Input {
	return history.Input{Op: history.OpDrop, Key: 0, Now: dropStart, Window: dropEnd - dropStart}
}

// entry is checkout co's reservation of qty units of key 0 at now as
// buyer, ranked rank by the published draw.
func entry(co, qty, buyer, rank int, now int64) history.Input {
	in := reserve(co, line(0, qty))
	in.Now, in.Buyer, in.Rank, in.Wait = now, buyer, rank, dropWait
	return in
}

func serveAt(now int64) history.Input {
	return history.Input{Op: history.OpServe, Key: 0, Now: now}
}

// partialServeAt is a waitlist pass concurrent with other calls: it may
// stop after any grant.
func partialServeAt(now int64) history.Input {
	in := serveAt(now)
	in.Partial = true
	return in
}

func readAt(co int, now int64) history.Input {
	in := onCO(history.OpHold, co, 0)
	in.Now = now
	return in
}

func onCOAt(op history.Op, co int, now int64) history.Input {
	in := onCO(op, co, 0)
	in.Now = now
	return in
}

var (
	waitlisted = history.Output{Result: history.ResWaitlisted}
	// granted is a read of an entrant's hold granted at dropEnd.
	granted = history.Output{Result: history.ResOK, Status: holdfast.StatusHeld, Exp: dropEnd + 15*minute}
)

func res(r string) history.Output { return history.Output{Result: r} }

// TestModelRejectsWrongDrops: fair drops in the model (drop.go) — entries
// in the window, one per buyer, granted at a waitlist pass after the window
// in the published draw's order as stock allows, the key first come first
// served behind them — reject the wrong answers an engine could give and
// accept their legal twins.
func TestModelRejectsWrongDrops(t *testing.T) {
	t.Setenv("HOLDFAST_ARTIFACTS", t.TempDir())
	// Key 0 with stock, a drop set.
	base := func(stock int) *hist { return new(hist).seq(set(0, stock), ok).seq(dropOp(), ok) }
	// Two buyers entered, co1 drawn second, co2 first.
	two := func(stock int) *hist {
		return base(stock).seq(entry(1, 1, 1, 2, inWindow), waitlisted).seq(entry(2, 1, 2, 1, inWindow), waitlisted)
	}
	served := func(stock int) *hist { return two(stock).seq(serveAt(dropEnd), ok) }
	// Stock 2, one unit held by co9 before the drop; co1 entered for 2
	// units, ranked first: it fits the stock, not what is sellable.
	front := func() *hist {
		return new(hist).seq(set(0, 2), ok).seq(reserve(9, line(0, 1)), held).seq(dropOp(), ok).
			seq(entry(1, 2, 1, 1, inWindow), waitlisted)
	}
	cases := []struct {
		name      string
		bad, good *hist
	}{{
		name: "a hold first come first served in the window",
		bad:  base(3).seq(entry(1, 1, 1, 1, inWindow), held),
		good: base(3).seq(entry(1, 1, 1, 1, inWindow), waitlisted),
	}, {
		name: "an entry acknowledged before the window",
		bad:  base(3).seq(entry(1, 1, 1, 1, dropStart-1), waitlisted),
		good: base(3).seq(entry(1, 1, 1, 1, dropStart-1), res(history.ResDropNotOpen)),
	}, {
		name: "two entries for one buyer",
		bad:  base(3).seq(entry(1, 1, 7, 1, inWindow), waitlisted).seq(entry(2, 1, 7, 2, inWindow), waitlisted),
		good: base(3).seq(entry(1, 1, 7, 1, inWindow), waitlisted).seq(entry(2, 1, 7, 0, inWindow), res(history.ResDropEntered)),
	}, {
		name: "a retry of an entry refused as another checkout's",
		bad:  base(3).seq(entry(1, 1, 7, 1, inWindow), waitlisted).seq(entry(1, 1, 7, 1, inWindow), res(history.ResDropEntered)),
		good: base(3).seq(entry(1, 1, 7, 1, inWindow), waitlisted).seq(entry(1, 1, 7, 1, inWindow), waitlisted),
	}, {
		name: "an entry without a buyer acknowledged",
		bad:  base(3).seq(entry(1, 1, 0, 1, inWindow), waitlisted),
		good: base(3).seq(entry(1, 1, 0, 0, inWindow), res(history.ResInvalid)),
	}, {
		name: "an acknowledged entry missing from the published draw",
		bad:  base(3).seq(entry(1, 1, 1, 0, inWindow), waitlisted),
		good: base(3).seq(entry(1, 1, 1, 1, inWindow), waitlisted),
	}, {
		name: "a grant before the window ended",
		bad:  two(3).seq(serveAt(dropEnd-1), ok).seq(readAt(2, dropEnd-1), history.Output{Result: history.ResOK, Status: holdfast.StatusHeld, Exp: dropEnd - 1 + 15*minute}),
		good: two(3).seq(serveAt(dropEnd-1), ok).seq(readAt(2, dropEnd-1), waitlisted),
	}, {
		name: "more granted than stock",
		bad:  served(1).seq(readAt(2, dropEnd), granted).seq(readAt(1, dropEnd), granted),
		good: served(1).seq(readAt(2, dropEnd), granted).seq(readAt(1, dropEnd), waitlisted),
	}, {
		name: "grants out of the draw's order",
		bad:  served(1).seq(readAt(1, dropEnd), granted),
		good: served(1).seq(readAt(1, dropEnd), waitlisted),
	}, {
		name: "an entrant left waiting with stock left after the grants before it",
		bad:  served(2).seq(readAt(2, dropEnd), granted).seq(readAt(1, dropEnd), waitlisted),
		good: served(2).seq(readAt(2, dropEnd), granted).seq(readAt(1, dropEnd), granted),
	}, {
		name: "a unit given back not granted to the next entrant",
		bad: served(1).seq(onCOAt(history.OpRelease, 2, dropEnd), released).seq(serveAt(dropEnd), ok).
			seq(readAt(1, dropEnd), waitlisted),
		good: served(1).seq(onCOAt(history.OpRelease, 2, dropEnd), released).seq(serveAt(dropEnd), ok).
			seq(readAt(1, dropEnd), granted),
	}, {
		name: "head of line: a smaller entrant granted past a front one that does not fit",
		bad: front().seq(entry(2, 1, 2, 2, inWindow), waitlisted).
			seq(serveAt(dropEnd), ok).seq(readAt(2, dropEnd), granted),
		good: front().seq(entry(2, 1, 2, 2, inWindow), waitlisted).
			seq(serveAt(dropEnd), ok).seq(readAt(2, dropEnd), waitlisted),
	}, {
		name: "a new buyer served ahead of a waiting entrant after the window",
		bad: front().seq(serveAt(dropEnd), ok).
			seq(history.Input{Op: history.OpReserve, Key: 0, CO: 5, Qty: 1, Now: dropEnd, TTL: 15 * minute, Life: hour}, history.Output{Result: history.ResOK, Exp: dropEnd + 15*minute}),
		good: front().seq(serveAt(dropEnd), ok).
			seq(history.Input{Op: history.OpReserve, Key: 0, CO: 5, Qty: 1, Now: dropEnd, TTL: 15 * minute, Life: hour}, soldOut),
	}, {
		name: "a cancelled entrant granted",
		bad: two(1).seq(onCOAt(history.OpRelease, 2, inWindow), res(history.ResWaitCancelled)).seq(serveAt(dropEnd), ok).
			seq(readAt(2, dropEnd), granted),
		good: two(1).seq(onCOAt(history.OpRelease, 2, inWindow), res(history.ResWaitCancelled)).seq(serveAt(dropEnd), ok).
			seq(readAt(2, dropEnd), res(history.ResWaitCancelled)),
	}, {
		name: "a wait that ran out still answered waiting",
		bad:  served(1).seq(readAt(1, dropEnd+dropWait), waitlisted),
		good: served(1).seq(readAt(1, dropEnd+dropWait), res(history.ResWaitExpired)),
	}, {
		name: "a granted hold lost: its claim answered not found",
		bad:  served(1).seq(onCOAt(history.OpClaim, 2, dropEnd), res(history.ResNotFound)),
		good: served(1).seq(onCOAt(history.OpClaim, 2, dropEnd), claimed),
	}, {
		name: "a granted hold's expiry not counted from the grant",
		bad:  served(1).seq(readAt(2, dropEnd), history.Output{Result: history.ResOK, Status: holdfast.StatusHeld, Exp: inWindow + 15*minute}),
		good: served(1).seq(readAt(2, dropEnd), granted),
	}, {
		name: "a claim of a waiting entrant acknowledged",
		bad:  served(1).seq(onCOAt(history.OpClaim, 1, dropEnd), claimed),
		good: served(1).seq(onCOAt(history.OpClaim, 1, dropEnd), res(history.ResCheckoutWaiting)),
	}, {
		name: "an entrant kept waiting after its units were claimed away",
		bad: served(1).seq(onCOAt(history.OpClaim, 2, dropEnd), claimed).seq(serveAt(dropEnd), ok).
			seq(readAt(1, dropEnd), waitlisted),
		good: served(1).seq(onCOAt(history.OpClaim, 2, dropEnd), claimed).seq(serveAt(dropEnd), ok).
			seq(readAt(1, dropEnd), res(history.ResWaitUnservable)),
	}, {
		name: "a pass that ran alone stopped before the grants stock allowed",
		bad:  two(2).seq(serveAt(dropEnd), ok).seq(readAt(2, dropEnd), granted).seq(readAt(1, dropEnd), waitlisted),
		good: two(2).seq(partialServeAt(dropEnd), ok).seq(readAt(2, dropEnd), granted).seq(readAt(1, dropEnd), waitlisted),
	}, {
		// The defect HistoryDrop found: the grant recorded no buyer.
		name: "a granted entrant's own retry answered as another buyer's",
		bad:  served(1).seq(readAt(2, dropEnd), granted).seq(entry(2, 1, 2, 1, dropEnd), res(history.ResConflict)),
		good: served(1).seq(readAt(2, dropEnd), granted).seq(entry(2, 1, 2, 1, dropEnd), granted),
	}, {
		// A doomed wait the engine ended as unservable before it ran out
		// reads unservable after it ran out too (stock changes and claims
		// carry no time, so the model cannot order the two); one never
		// doomed ran out.
		name: "a wait that ran out, read unservable without a claim or stock change",
		bad:  served(1).seq(readAt(1, dropEnd+dropWait), res(history.ResWaitUnservable)),
		good: served(1).seq(onCOAt(history.OpClaim, 2, dropEnd), claimed).seq(readAt(1, dropEnd+dropWait), res(history.ResWaitUnservable)),
	}, {
		name: "a wait ended unservable while the stock covered it",
		bad:  served(1).seq(readAt(1, dropEnd), res(history.ResWaitUnservable)),
		good: served(1).seq(onCOAt(history.OpClaim, 2, dropEnd), claimed).seq(readAt(1, dropEnd), res(history.ResWaitUnservable)),
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
