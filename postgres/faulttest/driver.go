package faulttest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// Strategies are the engine's allocation strategies, the default (batch)
// first; Schedule keys cycle through them.
var Strategies = []holdfast.Strategy{holdfast.StrategyBatch, holdfast.StrategyCounter, holdfast.StrategyPool, holdfast.StrategySlots}

// Schedule is a seeded random mix of operations run by concurrent workers in
// epochs. Within an epoch the injected clock stands still unless
// ConcurrentExpiry is set, and sweeps run concurrently with everything else;
// between epochs, with nothing running, the engine is let go quiet (Env.Quiesce), the clock
// may jump and every expired hold is swept (recorded in the history).
type Schedule struct {
	Seed        uint64
	Workers     int // concurrent clients; default 6
	Epochs      int // default 5
	OpsPerEpoch int // per worker; default 15
	Keys        int // default 4: one per strategy
	Stock       int // initial available per key; default 12
	// KeyStrategy gives every key this strategy ("" cycles through
	// Strategies).
	KeyStrategy holdfast.Strategy
	// ReserveShare is the percentage of operations that reserve a new
	// checkout; default 35. The other operations keep their proportions.
	ReserveShare int
	// MultiLine lets carts span two keys, lines in random order.
	MultiLine bool
	// ConcurrentExpiry moves the clock and sweeps while workers run (not
	// with a history: expiry is then not decidable from the history).
	ConcurrentExpiry bool
	// Storm sends every reserve, claim and release this many times at once
	// with the same checkout (a client retry storm); 0 or 1 is none.
	Storm int
	// PauseRate and PauseMax: random pauses at statement boundaries.
	PauseRate float64
	PauseMax  time.Duration
	// KillMean: terminate a random engine backend every KillMean on
	// average while workers run; 0 is none.
	KillMean time.Duration
	// CommitKill: fraction of commits whose backend is terminated right
	// before COMMIT. CommitCut: fraction of commits whose answer the Proxy
	// drops (needs Options.Proxy).
	CommitKill float64
	CommitCut  float64
	// CancelRate: fraction of new reservations whose caller gives up
	// after a random 0–2 ms (on batch keys: often while queued in the
	// combiner). Their outcome is unknown; the history bounds it.
	CancelRate float64
	// StrategyChanges lets workers switch a key's strategy and pool cap
	// under load (moving its buffered units between buffers).
	StrategyChanges bool
	// OpTimeout bounds each operation; default 15s.
	OpTimeout time.Duration
	// During runs concurrently with the workers of each epoch (a fault such
	// as a server restart); the epoch ends when it and the workers are done.
	During func(ctx context.Context, epoch int)
}

// Stats counts a run's operations by operation and result.
type Stats struct {
	mu  sync.Mutex
	ops map[string]int
	Ops atomic.Int64
}

func (s *Stats) add(op string, err error) {
	s.Ops.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ops == nil {
		s.ops = map[string]int{}
	}
	s.ops[op+" "+history.Classify(err)]++
}

// Count returns how many op operations ended with result.
func (s *Stats) Count(op, result string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ops[op+" "+result]
}

// Result returns how many operations of any kind ended with result.
func (s *Stats) Result(result string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.ops {
		if strings.HasSuffix(k, " "+result) {
			n += v
		}
	}
	return n
}

func (s *Stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.ops)) {
		fmt.Fprintf(&b, "%s=%d ", k, s.ops[k])
	}
	return b.String()
}

type checkout struct {
	shop  int64
	id    uuid.UUID
	lines []holdfast.Line
}

// Run runs the schedule on e: it stocks the keys, runs the epochs with the
// faults switched on, switches them off and returns the operation counts.
// The caller then calls e.Verify.
func (s Schedule) Run(ctx context.Context, e *Env) *Stats {
	e.T.Helper()
	if s.Workers == 0 {
		s.Workers = 6
	}
	if s.Epochs == 0 {
		s.Epochs = 5
	}
	if s.OpsPerEpoch == 0 {
		s.OpsPerEpoch = 15
	}
	if s.Keys == 0 {
		s.Keys = len(Strategies)
	}
	if s.Stock == 0 {
		s.Stock = 12
	}
	if s.OpTimeout == 0 {
		s.OpTimeout = 15 * time.Second
	}
	if e.Hist != nil && s.ConcurrentExpiry {
		e.T.Fatal("faulttest: a history needs the clock to move between epochs only")
	}
	const shop = 1
	base := len(e.Keys)
	for i := range s.Keys {
		st := s.KeyStrategy
		if st == "" {
			st = Strategies[i%len(Strategies)]
		}
		e.AddKey(holdfast.Key{ShopID: shop, ItemID: int64(100 + base + i), LocationID: 1}, st, s.Stock)
	}
	if s.ReserveShare == 0 {
		s.ReserveShare = 35
	}
	keys := e.Keys[base:]

	e.Hook.SetPauses(s.PauseRate, s.PauseMax, s.Seed)
	e.KillBeforeCommit(s.CommitKill, s.Seed, e.bouncer())
	if s.CommitCut > 0 {
		if e.Proxy == nil {
			e.T.Fatal("faulttest: CommitCut needs Options.Proxy")
		}
		e.Proxy.SetCutRate(s.CommitCut, s.Seed)
	}
	stats := &Stats{}
	var mu sync.Mutex
	var cos []checkout
	// One concurrent sweep at a time: two sweeps skip each other's locked
	// rows, which the model's concurrent sweep (Input.Partial) does not
	// describe.
	var sweepMu sync.Mutex
	ttls := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute}
	rng := rand.New(rand.NewPCG(s.Seed, 1))

	for epoch := range s.Epochs {
		var stopKiller func()
		if s.KillMean > 0 {
			stopKiller = e.StartKiller(s.KillMean, s.Seed+uint64(epoch))
		}
		var wg sync.WaitGroup
		if s.During != nil {
			wg.Add(1)
			go func() { defer wg.Done(); s.During(ctx, epoch) }()
		}
		for w := range s.Workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(s.Seed, uint64(epoch*1000+w+2)))
				pick := func() (checkout, bool) {
					mu.Lock()
					defer mu.Unlock()
					if len(cos) == 0 {
						return checkout{}, false
					}
					// Favour recent checkouts: they are likelier held.
					n := len(cos)
					i := n - 1 - min(n-1, int(r.ExpFloat64()*8))
					return cos[i], true
				}
				storm := func(op string, fn func(ctx context.Context) error) {
					n := max(1, s.Storm)
					var sw sync.WaitGroup
					for range n {
						sw.Add(1)
						go func() {
							defer sw.Done()
							octx, cancel := context.WithTimeout(ctx, s.OpTimeout)
							defer cancel()
							stats.add(op, fn(octx))
						}()
					}
					sw.Wait()
					if n > 1 {
						e.Tally.Inject("client retry storm (concurrent duplicates)", n-1)
					}
				}
				for range s.OpsPerEpoch {
					if ctx.Err() != nil {
						return
					}
					octx, cancel := context.WithTimeout(ctx, s.OpTimeout)
					// x < 35 reserves; the rest keep their shares of 35..100.
					x := r.IntN(100)
					if x < s.ReserveShare {
						x = x * 35 / s.ReserveShare
					} else {
						x = 35 + (x-s.ReserveShare)*65/(100-s.ReserveShare)
					}
					switch {
					case x < 35: // reserve a new checkout
						k := keys[r.IntN(len(keys))]
						lines := []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1 + r.IntN(3)}}
						if s.MultiLine && r.IntN(4) == 0 {
							k2 := keys[r.IntN(len(keys))]
							if k2.Key != k.Key {
								lines = append(lines, holdfast.Line{ItemID: k2.ItemID, LocationID: k2.LocationID, Quantity: 1 + r.IntN(2)})
							}
						}
						var id uuid.UUID
						for i := range id {
							id[i] = byte(r.Uint32())
						}
						id[6], id[8] = id[6]&0x0f|0x40, id[8]&0x3f|0x80
						co := checkout{shop: shop, id: id, lines: lines}
						e.Register(co.shop, co.id, co.lines)
						mu.Lock()
						cos = append(cos, co)
						mu.Unlock()
						ttl := ttls[r.IntN(len(ttls))]
						var giveUp time.Duration
						if r.Float64() < s.CancelRate {
							giveUp = time.Duration(r.Int64N(int64(2*time.Millisecond) + 1))
						}
						storm("reserve", func(ctx context.Context) error {
							if giveUp > 0 {
								var cancel context.CancelFunc
								ctx, cancel = context.WithTimeout(ctx, giveUp)
								defer cancel()
								e.Tally.Inject("caller gave up (context deadline)", 1)
							}
							_, err := e.Reserve(ctx, w, co.shop, co.id, co.lines, ttl)
							return err
						})
					case x < 40: // a client retrying a reservation it may have made
						if co, ok := pick(); ok {
							ttl := ttls[r.IntN(len(ttls))]
							_, err := e.Reserve(octx, w, co.shop, co.id, co.lines, ttl)
							stats.add("re-reserve", err)
						}
					case x < 55:
						if co, ok := pick(); ok {
							storm("claim", func(ctx context.Context) error {
								_, err := e.Claim(ctx, w, co.shop, co.id)
								return err
							})
						}
					case x < 65:
						if co, ok := pick(); ok {
							storm("release", func(ctx context.Context) error {
								_, err := e.Release(ctx, w, co.shop, co.id)
								return err
							})
						}
					case x < 75:
						if co, ok := pick(); ok {
							_, err := e.Extend(octx, w, co.shop, co.id, ttls[r.IntN(len(ttls))])
							stats.add("extend", err)
						}
					case x < 84:
						k := keys[r.IntN(len(keys))]
						_, err := e.Adjust(octx, w, k.Key, r.IntN(6)-2)
						stats.add("adjust", err)
					case x < 89:
						k := keys[r.IntN(len(keys))]
						_, err := e.Level(octx, w, k.Key)
						stats.add("level", err)
					case x < 94:
						_, err := e.Client.Replenish(octx)
						e.untyped("replenish", err)
						stats.add("replenish", err)
					case x < 97:
						// A sweep concurrent with everything else.
						sweepMu.Lock()
						_, err := e.Sweep(octx, w)
						sweepMu.Unlock()
						stats.add("sweep", err)
					case x < 98 && s.StrategyChanges:
						k := keys[r.IntN(len(keys))]
						err := e.SetStrategy(octx, k.Key, Strategies[r.IntN(len(Strategies))], 3+r.IntN(6))
						stats.add("set-strategy", err)
						if err == nil {
							e.Tally.Inject("strategy switched under load", 1)
						}
					default:
						if s.ConcurrentExpiry {
							e.Clock.Advance(time.Duration(r.IntN(8)) * time.Minute)
							e.Tally.Inject("clock advanced under load", 1)
							stats.add("advance", nil)
						}
					}
					cancel()
				}
			}()
		}
		wg.Wait()
		if stopKiller != nil {
			stopKiller()
		}
		// Barrier: nothing runs; let the engine go quiet (this bounds
		// the windows of unknown outcomes). Maybe move the clock and sweep.
		e.Quiesce(ctx)
		if !s.ConcurrentExpiry {
			if rng.IntN(2) == 0 {
				e.Clock.Advance(time.Duration(rng.IntN(20)) * time.Minute)
				e.Tally.Inject("clock advanced between epochs", 1)
			}
			if rng.IntN(3) > 0 {
				e.SweepAll(ctx, s.Workers)
			}
		}
	}
	e.Hook.SetPauses(0, 0, 0)
	e.KillBeforeCommit(0, 0, false)
	if e.Proxy != nil {
		e.Proxy.SetCutRate(0, 0)
		e.Tally.Inject("COMMIT answer lost (server committed)", int(e.Proxy.CutCommitted.Load()))
		e.Tally.Inject("COMMIT answer lost (server rolled back)", int(e.Proxy.Cut.Load()-e.Proxy.CutCommitted.Load()))
	}
	e.Quiesce(ctx)
	e.T.Logf("combiner: %d batch transactions, %d of them serving 2+ reservations", e.Hook.Batches.Load(), e.Hook.Combined.Load())
	e.Tally.Inject("random pause at statement boundary", int(e.Hook.Pauses.Load()))
	e.Tally.Inject("(consequence) call answered with unknown outcome", stats.Result(history.ResUnknown))
	return stats
}

func (e *Env) bouncer() bool { return e.bouncerOn }
