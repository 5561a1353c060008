package enginetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// History of a fair drop: a small stock, more buyers than units.
const (
	histDropStock  = 3
	histDropWindow = 10 * time.Minute
)

// dropCheckout is one checkout of a drop history.
type dropCheckout struct {
	num, qty, buyer int // buyer 0: none
	id              uuid.UUID
	ttl             time.Duration
}

// testHistoryDrop runs seeded concurrent epochs around a fair drop on one
// key, records every call and its answer and checks the history
// linearizable against history.Model (internal/history/drop.go):
//   - before the window: reservations (refused, drop not open), reads;
//   - in the window: buyers entering, a buyer under several checkouts,
//     retries of one entry from two goroutines at once, reservations
//     without a buyer, reads, releases (cancelled entries), claims of
//     waiting checkouts, stock changes, levels;
//   - after the window (the draw left to the first reservation, a
//     concurrent waitlist pass or one between epochs): new buyers first
//     come first served behind the entrants, retries, claims, releases and
//     reads of granted holds and waiting entrants, stock changes, the clock
//     moved so holds and waits run out, sweeps and waitlist passes between
//     epochs.
//
// The clock is the injected one: the window opens and closes when the
// test moves it, between epochs, so nothing depends on timing. At the end
// a last waitlist pass draws (if nobody did), the published draw is
// checked as anyone would (holdfast.VerifyDrop against its commitment) and
// its ranks are given to the recorded entries (history.Input.Rank): the
// model checks that grants follow them, as stock allows, and never before
// the window's end.
//
// New buyers' reservations are recorded lenient (Input.Strict unset: the
// pool strategies' buffers are empty while the key has waiters and come
// back at a later refill); entries are strict: in the window a reservation
// enters, never comes back short.
func testHistoryDrop(t *testing.T, h *Harness) {
	t.Parallel()
	seed := seedFor(t)
	before, during, after, opsPerEpoch, workers, buyers := 1, 2, 4, 12, 5, 12
	if long() {
		before, during, after, opsPerEpoch, workers, buyers = 1, 4, 12, 30, 8, 40
	}
	for _, s := range h.Strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d (replay with HOLDFAST_SEED=%d)", seed, seed)
			e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 5, Slots: 3, LowWaterPercent: 50}, Options{Conns: 2*workers + 4})
			e.allowOver = true
			ctx := ctxb()
			hist := history.NewHistory()
			life := holdfast.HoldLifetimeMaxDefault.Microseconds()
			k := key(1, 1)
			call := hist.Now()
			e.stock(k, histDropStock)
			hist.Add(0, history.Input{Op: history.OpSet, Key: 0, Delta: histDropStock}, call, history.Output{Result: history.ResOK})
			call = hist.Now()
			d, err := e.e.SetDrop(ctx, holdfast.DropParams{Key: k, StartsAt: e.Clock.Now().Add(time.Minute), Window: histDropWindow})
			if err != nil {
				t.Fatalf("SetDrop: %v", err)
			}
			hist.Add(0, history.Input{Op: history.OpDrop, Key: 0, Now: d.StartsAt.UnixMicro(), Window: d.Window.Microseconds()}, call, history.Output{Result: history.ResOK})

			var mu sync.Mutex
			var cos, made []*dropCheckout // every checkout; those answered an entry or a hold
			nextBuyer := 0
			answers := map[string]int{}
			count := func(what string) {
				mu.Lock()
				answers[what]++
				mu.Unlock()
			}
			// Reservations are added once the draw gave the entrants their
			// ranks.
			type pendingOp struct {
				op porcupine.Operation
				id uuid.UUID
			}
			var reserves []pendingOp
			pick := func(r *rand.Rand) (*dropCheckout, bool) {
				mu.Lock()
				defer mu.Unlock()
				from := cos
				if len(made) > 0 && r.IntN(4) > 0 {
					from = made
				}
				if len(from) == 0 {
					return nil, false
				}
				n := len(from)
				return from[n-1-min(n-1, int(r.ExpFloat64()*6))], true
			}
			ttls := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute}
			var bad errorSink
			untyped := func(op string, err error) {
				if history.Classify(err) == history.ResUntyped {
					bad.add("%s returned an untyped error: %v", op, err)
				}
			}
			reserve := func(w int, co *dropCheckout, strict bool) {
				now := e.Clock.Now()
				p := holdfast.ReserveParams{ShopID: 1, CheckoutID: co.id, TTL: co.ttl, Lines: one(k.ItemID, co.qty)}
				if co.buyer > 0 {
					p.BuyerID = fmt.Sprintf("buyer-%d", co.buyer)
				}
				call := hist.Now()
				got, err := e.e.Reserve(ctx, p)
				ret := hist.Now()
				untyped("reserve", err)
				out := history.Output{Result: history.Classify(err)}
				if err == nil {
					out.Exp, out.Replayed = got.ExpiresAt.UnixMicro(), got.Replayed
					if len(got.Lines) != 1 || got.Lines[0].Quantity != co.qty {
						bad.add("reserve of checkout %d answered lines %+v", co.num, got.Lines)
					}
				}
				in := history.Input{Op: history.OpReserve, Key: 0, CO: co.num, Qty: co.qty, Now: now.UnixMicro(), TTL: co.ttl.Microseconds(), Life: life, Buyer: co.buyer, Strict: strict}
				if co.buyer > 0 {
					// An entry waits DropWaitDefault (ReserveParams.Wait
					// unset: a plain reservation short after the window
					// does not wait, which the model does not know).
					in.Wait = min(holdfast.DropWaitDefault, holdfast.WaitMaxDefault).Microseconds()
				}
				mu.Lock()
				if out.Result == history.ResOK || out.Result == history.ResWaitlisted {
					made = append(made, co)
				}
				reserves = append(reserves, pendingOp{porcupine.Operation{ClientId: w, Input: in, Call: call, Output: out, Return: ret}, co.id})
				mu.Unlock()
				count("reserve " + out.Result)
			}
			newCheckout := func(r *rand.Rand, buyer int) *dropCheckout {
				mu.Lock()
				defer mu.Unlock()
				qty := 1
				if r.IntN(4) == 0 {
					qty = 2
				}
				co := &dropCheckout{num: len(cos), qty: qty, buyer: buyer, id: uuid.New(), ttl: ttls[r.IntN(len(ttls))]}
				cos = append(cos, co)
				return co
			}
			onCheckout := func(w int, op history.Op, co *dropCheckout) {
				now := e.Clock.Now()
				call := hist.Now()
				var got *holdfast.Hold
				var err error
				switch op {
				case history.OpClaim:
					got, err = e.e.Claim(ctx, 1, co.id)
				case history.OpRelease:
					got, err = e.e.Release(ctx, 1, co.id)
				default:
					got, err = e.e.Hold(ctx, 1, co.id)
				}
				untyped(string(op), err)
				out := history.Output{Result: history.Classify(err)}
				if err == nil {
					out.Status, out.Exp = got.Status, got.ExpiresAt.UnixMicro()
				}
				hist.Add(w, history.Input{Op: op, Key: 0, CO: co.num, Now: now.UnixMicro()}, call, out)
				count(string(op) + " " + out.Result)
			}
			// serve runs a waitlist pass; concurrent: while other calls run
			// (history.Input.Partial: it may stop after any grant).
			serve := func(w int, concurrent bool) {
				now := e.Clock.Now()
				call := hist.Now()
				_, err := e.e.ServeWaitlist(ctx)
				if err != nil {
					bad.add("serve: %v", err)
					return
				}
				hist.Add(w, history.Input{Op: history.OpServe, Key: 0, Now: now.UnixMicro(), Partial: concurrent}, call, history.Output{Result: history.ResOK})
			}
			other := func(w int, r *rand.Rand, x int) {
				switch {
				case x < 88:
					delta := r.IntN(3) - 1
					call := hist.Now()
					l, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: delta, Reason: "history adjust"})
					untyped("adjust", err)
					out := history.Output{Result: history.Classify(err)}
					if err == nil {
						out.Available, out.Held = l.Available, l.Held
					}
					hist.Add(w, history.Input{Op: history.OpAdjust, Key: 0, Delta: delta}, call, out)
					count("adjust " + out.Result)
				default:
					call := hist.Now()
					l, err := e.e.Level(ctx, k)
					untyped("level", err)
					if err == nil {
						hist.Add(w, history.Input{Op: history.OpLevel, Key: 0}, call,
							history.Output{Result: history.ResOK, Available: l.Available, Held: l.Held})
					}
				}
			}
			// inWindow: entries; else (before or after the window) new
			// buyers without a buyer id, first come first served.
			epoch := func(n int, inWindow bool) {
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(seed, uint64(n*1000+w+2)))
						for range opsPerEpoch {
							switch x := r.IntN(100); {
							case x < 35:
								buyer := 0
								if inWindow || r.IntN(3) == 0 {
									mu.Lock()
									if nextBuyer < buyers && r.IntN(4) > 0 {
										nextBuyer++
										buyer = nextBuyer
									} else {
										buyer = 1 + r.IntN(max(1, nextBuyer)) // again: one entry each
									}
									mu.Unlock()
								}
								if inWindow && r.IntN(10) == 0 {
									buyer = 0 // refused: no buyer id
								}
								co := newCheckout(r, buyer)
								if r.IntN(3) == 0 {
									// The same entry sent twice at once.
									var twice sync.WaitGroup
									twice.Add(1)
									go func() { defer twice.Done(); reserve(100+w, co, inWindow) }()
									reserve(w, co, inWindow)
									twice.Wait()
								} else {
									reserve(w, co, inWindow)
								}
							case x < 45:
								if co, ok := pick(r); ok {
									reserve(w, co, inWindow && co.buyer > 0)
								}
							case x < 60:
								if co, ok := pick(r); ok {
									onCheckout(w, history.OpHold, co)
								}
							case x < 66:
								if co, ok := pick(r); ok {
									onCheckout(w, history.OpRelease, co)
								}
							case x < 74:
								if co, ok := pick(r); ok {
									onCheckout(w, history.OpClaim, co)
								}
							case x < 76 && !inWindow:
								serve(w, true)
							default:
								other(w, r, x)
							}
						}
					}()
				}
				wg.Wait()
			}
			// readAll reads every checkout answered an entry or a hold, with
			// nothing else running: after a pass, who got a hold in which
			// order is plain to the model.
			readAll := func() {
				mu.Lock()
				all := slices.Clone(made)
				mu.Unlock()
				seen := map[int]bool{}
				for _, co := range all {
					if !seen[co.num] {
						seen[co.num] = true
						onCheckout(0, history.OpHold, co)
					}
				}
			}
			rng := rand.New(rand.NewPCG(seed, 1))
			n := 0
			for range before {
				epoch(n, false)
				n++
			}
			// The window opens.
			e.Clock.Advance(time.Minute + time.Duration(rng.IntN(60))*time.Second)
			for i := range during {
				epoch(n, true)
				n++
				if i+1 < during {
					e.Clock.Advance(time.Duration(rng.IntN(60)) * time.Second)
				}
			}
			// The window ends: drawn by a waitlist pass now, or left to the
			// next reservation or concurrent pass.
			e.Clock.Advance(d.EndsAt().Sub(e.Clock.Now()) + time.Duration(rng.IntN(3))*time.Minute)
			if rng.IntN(2) == 0 {
				serve(0, false)
				readAll()
			}
			for range after {
				epoch(n, false)
				n++
				if rng.IntN(2) == 0 {
					e.Clock.Advance(time.Duration(rng.IntN(12)) * time.Minute)
				}
				if rng.IntN(2) == 0 {
					now := e.Clock.Now()
					call := hist.Now()
					for {
						m, err := e.e.SweepOnce(ctx)
						if err != nil {
							t.Fatalf("sweep: %v", err)
						}
						if m == 0 {
							break
						}
					}
					hist.Add(0, history.Input{Op: history.OpSweep, Key: -1, Now: now.UnixMicro()}, call, history.Output{Result: history.ResOK})
				}
				if rng.IntN(3) > 0 {
					serve(0, false)
				}
			}
			serve(0, false)
			readAll()
			bad.check(t)
			// The published draw, checked as anyone would, ranks the
			// entries.
			d = e.drop(k)
			if d.State != holdfast.DropDrawn {
				t.Fatalf("drop after the window and a waitlist pass: %+v", d)
			}
			if err := holdfast.VerifyDrop(d); err != nil {
				t.Fatalf("VerifyDrop: %v", err)
			}
			ranks := map[uuid.UUID]int{}
			for _, en := range d.Entrants {
				ranks[en.CheckoutID] = en.Rank
			}
			for _, p := range reserves {
				in := p.op.Input.(history.Input)
				in.Rank = ranks[p.id]
				p.op.Input = in
				hist.AddOp(p.op)
			}
			answers["entrants"] = len(d.Entrants)
			res, err := hist.Check(historyCheckTimeout)
			switch {
			case res == porcupine.Illegal:
				t.Fatalf("seed %d: %v", seed, err)
			case err != nil:
				t.Fatalf("seed %d: history check: %v", seed, err)
			case res == porcupine.Unknown:
				t.Logf("seed %d: the linearizability check of %d operations timed out after %v (not a failure)", seed, hist.Len(), historyCheckTimeout)
			default:
				t.Logf("%d operations, linearizable; answers: %v", hist.Len(), answers)
			}
		})
	}
}
