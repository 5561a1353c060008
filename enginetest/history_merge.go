package enginetest

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// Merges, bundles, buyers and hold reads in the history test (testHistory;
// issue #30: every feature that changes hold state is in the checker).

// histBundleItem is the history's bundle: one of key 2's item and two of
// key 3's.
const histBundleItem = 100

// histBuyerLimit is the per-buyer limit on the keys in histLimited (one of
// each group), among histBuyers named buyers.
const (
	histBuyerLimit = 4
	histBuyers     = 3
)

var histLimited = []int{0, 2}

// histBuyerID is buyer b's id ("" for 0: none).
func histBuyerID(b int) string {
	if b == 0 {
		return ""
	}
	return "buyer-" + strconv.Itoa(b)
}

// params is what a reservation of the checkout sends: its line, or its
// bundles.
func (co *histCheckout) params(keys []holdfast.Key) []holdfast.Line {
	if co.bundle > 0 {
		return []holdfast.Line{{ItemID: histBundleItem, LocationID: keys[2].LocationID, Quantity: co.bundle}}
	}
	return []holdfast.Line{{ItemID: keys[co.key].ItemID, LocationID: keys[co.key].LocationID, Quantity: co.qty}}
}

// cart is the model's cart for params: a bundle expanded into its
// components with the test's own copy of the definition, in key order.
func (co *histCheckout) cart() []history.CartLine {
	if co.bundle > 0 {
		return []history.CartLine{{Key: 2, Qty: co.bundle}, {Key: 3, Qty: 2 * co.bundle}}
	}
	return []history.CartLine{{Key: co.key, Qty: co.qty}}
}

// histLines is an answered hold's lines as the model's; a line of an item
// that is no key (the bundle's own, say) keeps a key no cart has, so the
// model rejects it. ok is false past history.CartLinesMax lines.
func histLines(keys []holdfast.Key, lines []holdfast.Line) (out [history.CartLinesMax]history.CartLine, n int, ok bool) {
	if len(lines) > history.CartLinesMax {
		return out, 0, false
	}
	for i, l := range lines {
		k := slices.IndexFunc(keys, func(k holdfast.Key) bool { return k.ItemID == l.ItemID && k.LocationID == l.LocationID })
		if k < 0 {
			k = 1000 + int(l.ItemID)
		}
		out[i] = history.CartLine{Key: k, Qty: l.Quantity}
	}
	return out, len(lines), true
}

// histMerge is an answered merge, retried now and then.
type histMerge struct{ from, into *histCheckout }

// mergeHistory is one merge of the history test: a checkout into another
// of its group, into a new checkout, or (sometimes) a retry of an answered
// merge. Exclusive of both checkouts' extends and edits (which are
// exclusive of everything on their checkout); reserves, claims, releases,
// cancels, sweeps and other merges race it. It
// returns the answer's result ("" when it did not run).
func mergeHistory(e *env, hist *history.History, w int, r *rand.Rand, pick func(*rand.Rand) (*histCheckout, bool),
	newCheckout func(int) *histCheckout, keys []holdfast.Key, mu *sync.Mutex, merges *[]histMerge, busy *histBusy, bad *errorSink) string {
	var from, into *histCheckout
	fresh := false
	mu.Lock()
	if len(*merges) > 0 && r.IntN(6) == 0 {
		m := (*merges)[r.IntN(len(*merges))]
		from, into = m.from, m.into
	}
	mu.Unlock()
	if from == nil {
		// A source likely held: not a new checkout a merge failed to create.
		for range 4 {
			if c, ok := pick(r); ok && !c.unmade.Load() {
				from = c
				break
			}
		}
		if from == nil {
			return ""
		}
		if r.IntN(3) == 0 {
			into, fresh = newCheckout(from.key), true // locked
		} else {
			for range 4 {
				if c, ok := pick(r); ok && c != from && histGroup(c.key) == histGroup(from.key) {
					into = c
					break
				}
			}
			if into == nil {
				return ""
			}
		}
	}
	// Shared, as reserves: a merge races reserves of both checkouts (a new
	// destination's first reserve included) and other merges, not their
	// extends and edits.
	if fresh {
		into.busy.Unlock()
	}
	if !into.busy.TryRLock() {
		return ""
	}
	defer into.busy.RUnlock()
	if !from.busy.TryRLock() {
		return ""
	}
	defer from.busy.RUnlock()
	now := e.Clock.Now()
	busy.enter(from.num, into.num)
	call := hist.Now()
	got, err := e.e.MergeCheckouts(ctxb(), 1, from.id, into.id)
	busy.leave(from.num, into.num)
	out := history.Output{Result: history.Classify(err)}
	if out.Result == history.ResUntyped || out.Result == history.ResInvalid {
		bad.add("merge of checkout %d into %d: %v", from.num, into.num, err)
	}
	if err == nil {
		out.Status, out.Exp, out.Replayed = got.Status, got.ExpiresAt.UnixMicro(), got.Replayed
		var ok bool
		if out.Lines, out.NLines, ok = histLines(keys, got.Lines); !ok {
			bad.add("merge of checkout %d into %d answered lines %+v", from.num, into.num, got.Lines)
		}
		mu.Lock() // other merges into it may run (edits of it may not)
		into.edits = got.Revision - 1
		if !got.Replayed {
			*merges = append(*merges, histMerge{from, into})
		}
		mu.Unlock()
	}
	if fresh && err != nil {
		into.unmade.Store(true)
	}
	in := history.Input{Op: history.OpMerge, Key: from.key, CO: from.num, Into: into.num, Now: now.UnixMicro()}
	in.Cart[0], in.Cart[1], in.NCart = history.CartLine{Key: from.key}, history.CartLine{Key: into.key}, 2
	hist.Add(w, in, call, out)
	if out.Replayed {
		return "replayed"
	}
	return out.Result
}

// holdHistory is a read of a checkout's hold (Engine.Hold): its status,
// expiry and, for a merged source, the checkout its lines went to.
func holdHistory(e *env, hist *history.History, w int, co *histCheckout, mu *sync.Mutex, cos *[]*histCheckout, bad *errorSink) {
	now := e.Clock.Now()
	call := hist.Now()
	got, err := e.e.Hold(ctxb(), 1, co.id)
	out := history.Output{Result: history.Classify(err)}
	if out.Result == history.ResUntyped {
		bad.add("hold read of checkout %d: %v", co.num, err)
	}
	if err == nil {
		out.Status, out.Exp = got.Status, got.ExpiresAt.UnixMicro()
		if got.MergedInto != nil {
			out.Into = -1
			mu.Lock()
			for _, c := range *cos {
				if c.id == *got.MergedInto {
					out.Into = c.num + 1
				}
			}
			mu.Unlock()
		}
	}
	hist.Add(w, history.Input{Op: history.OpHold, Key: co.key, CO: co.num, Now: now.UnixMicro()}, call, out)
}
