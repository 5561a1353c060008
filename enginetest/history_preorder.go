package enginetest

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// History of pre-orders: the key's stock and its cap are small so that
// reservations race beyond the stock into the headroom and past it.
const (
	histPreorderStock = 3
	histPreorderCap   = 4
)

// testHistoryPreorder runs seeded concurrent epochs of reserve (1..3
// units), re-reserve, claim, release, extend, hold read, stock change and
// level calls on one key with a small pre-order cap, records every call
// and its answer (a reservation's pre-ordered units, a hold read's),
// sweeps between epochs with nothing running, and checks the history
// linearizable against history.Model: a reservation pre-orders only what
// stock + headroom allow, claimed pre-ordered units are owed until a stock
// change converts them, releases and expiries give headroom back.
//
// Reservations are recorded lenient (Input.Strict unset): between the
// engine's plain attempt that found the key short and the split attempt
// that commits, releases and reservations may move the stock, so
// "pre-ordered while stock covered it" and "insufficient while stock +
// headroom had units" are not decidable at one point of the call
// (internal/history's TestModelRejectsWrongPreorders checks them on
// hand-made histories).
func testHistoryPreorder(t *testing.T, h *Harness) {
	t.Parallel()
	seed := seedFor(t)
	epochs, opsPerEpoch, workers := 4, 12, 5
	if long() {
		epochs, opsPerEpoch, workers = 16, 30, 8
	}
	for _, s := range h.Strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d (replay with HOLDFAST_SEED=%d)", seed, seed)
			e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 5, Slots: 3, LowWaterPercent: 50}, Options{Conns: workers + 4})
			e.allowOver = true
			ctx := ctxb()
			hist := history.NewHistory()
			life := holdfast.HoldLifetimeMaxDefault.Microseconds()
			k := key(1, 1)
			keys := []holdfast.Key{k}
			call := hist.Now()
			e.stock(k, histPreorderStock)
			hist.Add(0, history.Input{Op: history.OpSet, Key: 0, Delta: histPreorderStock}, call, history.Output{Result: history.ResOK})
			call = hist.Now()
			e.setPreorder(k, histPreorderCap, e.Clock.Now().Add(7*24*time.Hour))
			hist.Add(0, history.Input{Op: history.OpPreorder, Key: 0, Delta: histPreorderCap}, call, history.Output{Result: history.ResOK})

			var mu sync.Mutex
			var cos, made []*histCheckout // every checkout; those a reservation was answered for
			answers := map[string]int{}
			count := func(what string) {
				mu.Lock()
				answers[what]++
				mu.Unlock()
			}
			pick := func(r *rand.Rand) (*histCheckout, bool) {
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
			// preordered is an answered hold's pre-ordered units; its
			// lines must be one line of the key, all the units.
			preordered := func(what string, co *histCheckout, got *holdfast.Hold) int {
				if len(got.Lines) != 1 || got.Lines[0].ItemID != k.ItemID || got.Lines[0].LocationID != k.LocationID ||
					got.Lines[0].Quantity != co.qty || got.Lines[0].Preordered > co.qty ||
					(got.Lines[0].Preordered > 0) != (got.Lines[0].ExpectedAt != nil) {
					bad.add("%s of checkout %d answered lines %+v", what, co.num, got.Lines)
				}
				if len(got.Lines) == 0 {
					return 0
				}
				return got.Lines[0].Preordered
			}
			reserve := func(w int, co *histCheckout, ttl time.Duration) {
				co.busy.RLock()
				defer co.busy.RUnlock()
				now := e.Clock.Now()
				call := hist.Now()
				got, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: co.id, TTL: ttl, Lines: co.params(keys)})
				untyped("reserve", err)
				out := history.Output{Result: history.Classify(err)}
				if err == nil {
					out.Exp, out.Replayed = got.ExpiresAt.UnixMicro(), got.Replayed
					out.Preordered = preordered("reserve", co, got)
					if out.Preordered > 0 {
						count("reserve pre-ordered")
					}
					mu.Lock()
					made = append(made, co)
					mu.Unlock()
				}
				in := history.Input{Op: history.OpReserve, Key: 0, CO: co.num, Qty: co.qty, Now: now.UnixMicro(), TTL: ttl.Microseconds(), Life: life}
				in.NCart = copy(in.Cart[:], co.cart())
				hist.Add(w, in, call, out)
				count("reserve " + out.Result)
			}
			rng := rand.New(rand.NewPCG(seed, 1))
			for epoch := range epochs {
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(seed, uint64(epoch*1000+w+2)))
						for range opsPerEpoch {
							switch x := r.IntN(100); {
							case x < 30:
								mu.Lock()
								co := &histCheckout{num: len(cos), key: 0, qty: 1 + r.IntN(3), id: uuid.New(), busy: &sync.RWMutex{}}
								cos = append(cos, co)
								mu.Unlock()
								reserve(w, co, ttls[r.IntN(len(ttls))])
							case x < 36:
								if co, ok := pick(r); ok {
									reserve(w, co, ttls[r.IntN(len(ttls))])
								}
							case x < 64:
								co, ok := pick(r)
								if !ok {
									continue
								}
								op := history.OpClaim
								if x >= 52 {
									op = history.OpRelease
								}
								now := e.Clock.Now()
								call := hist.Now()
								var got *holdfast.Hold
								var err error
								if op == history.OpClaim {
									got, err = e.e.Claim(ctx, 1, co.id)
								} else {
									got, err = e.e.Release(ctx, 1, co.id)
								}
								untyped(string(op), err)
								out := history.Output{Result: history.Classify(err)}
								if err == nil {
									out.Status = got.Status
								}
								hist.Add(w, history.Input{Op: op, Key: 0, CO: co.num, Now: now.UnixMicro()}, call, out)
								count(string(op) + " " + out.Result)
							case x < 70:
								if co, ok := pick(r); ok && co.busy.TryLock() {
									ttl := ttls[r.IntN(len(ttls))]
									now := e.Clock.Now()
									call := hist.Now()
									got, err := e.e.Extend(ctx, 1, co.id, ttl)
									co.busy.Unlock()
									untyped("extend", err)
									out := history.Output{Result: history.Classify(err)}
									if err == nil {
										out.Exp = got.ExpiresAt.UnixMicro()
									}
									hist.Add(w, history.Input{Op: history.OpExtend, Key: 0, CO: co.num, Now: now.UnixMicro(), TTL: ttl.Microseconds()}, call, out)
								}
							case x < 78:
								if co, ok := pick(r); ok {
									now := e.Clock.Now()
									call := hist.Now()
									got, err := e.e.Hold(ctx, 1, co.id)
									untyped("hold read", err)
									out := history.Output{Result: history.Classify(err)}
									if err == nil {
										out.Status, out.Exp = got.Status, got.ExpiresAt.UnixMicro()
										out.Preordered = preordered("hold read", co, got)
									}
									hist.Add(w, history.Input{Op: history.OpHold, Key: 0, CO: co.num, Now: now.UnixMicro()}, call, out)
								}
							case x < 94:
								// Stock arrives (or is written off): owed
								// pre-orders convert.
								delta := r.IntN(4) - 1
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
					}()
				}
				wg.Wait()
				if rng.IntN(2) == 0 {
					e.Clock.Advance(time.Duration(rng.IntN(20)) * time.Minute)
				}
				if rng.IntN(2) == 0 {
					now := e.Clock.Now()
					call := hist.Now()
					for {
						n, err := e.e.SweepOnce(ctx)
						if err != nil {
							t.Fatalf("sweep: %v", err)
						}
						if n == 0 {
							break
						}
					}
					hist.Add(0, history.Input{Op: history.OpSweep, Key: -1, Now: now.UnixMicro()}, call, history.Output{Result: history.ResOK})
				}
			}
			bad.check(t)
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
