package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// counting is an Observer that counts retries by reason.
type counting struct {
	mu      sync.Mutex
	retries map[string]int
}

func (o *counting) Op(string, string, time.Duration)    {}
func (o *counting) Replenished(holdfast.Key, bool, int) {}
func (o *counting) Expired(int)                         {}
func (o *counting) Claimed(time.Duration)               {}
func (o *counting) Retry(route, state string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.retries == nil {
		o.retries = map[string]int{}
	}
	o.retries[route+"/"+state]++
}

func (o *counting) snapshot() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for k, v := range o.retries {
		out[k] = v
	}
	return out
}

// TestSeedRace is seed 003's race: 64 clients make 20 attempts each to hold
// one unit of a key that has 50. Exactly 50 are held, every other attempt
// is told "insufficient stock", and nothing else is answered. Answer times
// are reported, not asserted. batch/1000 starts deep (OptimisticDepth): its
// batches run optimistic, two at once, until one sees the key shallow; the
// test fails unless some did.
func TestSeedRace(t *testing.T) {
	t.Parallel()
	const clients, attempts = 64, 20
	for _, tc := range []struct {
		s     holdfast.Strategy
		units int
	}{{holdfast.StrategyPool, 50}, {holdfast.StrategyCounter, 50}, {holdfast.StrategyBatch, 50}, {holdfast.StrategyBatch, 1000}} {
		s, units := tc.s, tc.units
		name := string(s)
		if units != 50 {
			name = fmt.Sprintf("%s/%d", s, units)
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, clients, holdfast.Config{})
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			e.stock(k, units)
			e.strategy(k, s, 0)
			var held, sold atomic.Int64
			var mu sync.Mutex
			var times []time.Duration
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, clients*attempts)
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for range attempts {
						t0 := time.Now()
						_, err := e.reserve(1, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 1})
						d := time.Since(t0)
						mu.Lock()
						times = append(times, d)
						mu.Unlock()
						switch {
						case err == nil:
							held.Add(1)
						case errors.Is(err, holdfast.ErrInsufficientStock):
							sold.Add(1)
						default:
							errs <- err
						}
					}
				}()
			}
			t0 := time.Now()
			close(start)
			wg.Wait()
			wall := time.Since(t0)
			close(errs)
			for err := range errs {
				t.Errorf("unexpected answer: %v", err)
			}
			if held.Load() != int64(units) || sold.Load() != int64(clients*attempts-units) {
				t.Fatalf("held %d, sold out %d; want %d and %d", held.Load(), sold.Load(), units, clients*attempts-units)
			}
			if l := e.level(k); l.Held != units || l.Sellable != 0 || l.Pooled != 0 {
				t.Fatalf("level: %+v", l)
			}
			e.checkInvariant()
			if units >= mysql.OptimisticDepth && mysql.CombinedOptimistic(e.c) == 0 {
				t.Fatal("no batch ran optimistic on a deep key")
			}
			slices.Sort(times)
			pct := func(p float64) time.Duration { return times[int(p*float64(len(times)-1))] }
			within := 0
			for _, d := range times {
				if d <= time.Second {
					within++
				}
			}
			t.Logf("seed race %s: %d answers in %v; p50 %v p99 %v max %v; %d of %d answered within 1s; %d granted by combined batches, %d batches optimistic, %d of them again locked",
				name, len(times), wall.Round(time.Millisecond), pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond),
				times[len(times)-1].Round(time.Microsecond), within, len(times), mysql.CombinedGrants(e.c), mysql.CombinedOptimistic(e.c), mysql.CombinedShort(e.c))
		})
	}
}

// TestOppositeOrderCarts reserves two-key carts given in opposite orders,
// claims and releases them, from many goroutines on waiting (counter) and
// skipping (pool) buffers. Lines are taken in key order on every path, so
// InnoDB never even detects a deadlock: the test fails on any deadlock
// retry, not only on one that reaches the caller.
func TestOppositeOrderCarts(t *testing.T) {
	t.Parallel()
	for _, s := range []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyPool} {
		t.Run(string(s), func(t *testing.T) {
			obs := &counting{}
			e := newEnv(t, 16, holdfast.Config{Observer: obs})
			a := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			b := holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}
			for _, k := range []holdfast.Key{a, b} {
				e.stock(k, 100_000)
				e.strategy(k, s, 200)
			}
			const workers, rounds = 16, 40
			var wg sync.WaitGroup
			errs := make(chan error, workers*rounds)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					for i := range rounds {
						lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1 + i%3}, {ItemID: 2, LocationID: 1, Quantity: 1 + w%3}}
						if w%2 == 1 {
							lines[0], lines[1] = lines[1], lines[0]
						}
						h, err := e.reserve(1, lines...)
						if err != nil {
							errs <- fmt.Errorf("reserve: %w", err)
							continue
						}
						if i%2 == 0 {
							_, err = e.c.Claim(ctx, 1, h.CheckoutID)
						} else {
							_, err = e.c.Release(ctx, 1, h.CheckoutID)
						}
						if err != nil {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("surfaced: %v", err)
			}
			retries := obs.snapshot()
			for r, n := range retries {
				if len(r) > 5 && r[len(r)-5:] == "/1213" {
					t.Errorf("%d deadlocks detected on %s (lock order broken)", n, r)
				}
			}
			t.Logf("retries: %v", retries)
			e.checkInvariant()
		})
	}
}

// TestRandomizedRaces runs random reservations (carts of random keys in
// random order), claims, releases, extensions, sweeps with the clock moved,
// stock changes up and down (over-committing keys), strategy switches and
// replenishment, concurrently, and ends with the invariant over the whole
// database. The seed is logged for replay.
func TestRandomizedRaces(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	obs := &counting{}
	e := newEnv(t, 24, holdfast.Config{Observer: obs, PoolCap: 8})
	ctx := context.Background()
	keys := []holdfast.Key{}
	for item := int64(1); item <= 4; item++ {
		for loc := int64(1); loc <= 2; loc++ {
			k := holdfast.Key{ShopID: 1, ItemID: item, LocationID: loc}
			keys = append(keys, k)
			e.stock(k, 30)
			e.strategy(k, mysql.Strategies()[int(item+loc)%len(mysql.Strategies())], 0)
		}
	}
	var mu sync.Mutex
	var checkouts []uuid.UUID
	const workers, ops = 12, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers*ops)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			pick := func() (uuid.UUID, bool) {
				mu.Lock()
				defer mu.Unlock()
				if len(checkouts) == 0 {
					return uuid.Nil, false
				}
				return checkouts[r.IntN(len(checkouts))], true
			}
			for range ops {
				var err error
				switch op := r.IntN(100); {
				case op < 45:
					n := 1 + r.IntN(3)
					perm := r.Perm(len(keys))[:n]
					var lines []holdfast.Line
					for _, i := range perm {
						lines = append(lines, holdfast.Line{ItemID: keys[i].ItemID, LocationID: keys[i].LocationID, Quantity: 1 + r.IntN(4)})
					}
					var h *holdfast.Hold
					h, err = e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: lines, TTL: time.Duration(1+r.IntN(120)) * time.Second})
					if err == nil {
						mu.Lock()
						checkouts = append(checkouts, h.CheckoutID)
						mu.Unlock()
					}
				case op < 60:
					if id, ok := pick(); ok {
						_, err = e.c.Claim(ctx, 1, id)
					}
				case op < 70:
					if id, ok := pick(); ok {
						_, err = e.c.Release(ctx, 1, id)
					}
				case op < 75:
					if id, ok := pick(); ok {
						_, err = e.c.Extend(ctx, 1, id, time.Minute)
					}
				case op < 82:
					e.clock.Advance(time.Duration(r.IntN(40)) * time.Second)
					_, err = e.c.SweepOnce(ctx)
				case op < 92:
					k := keys[r.IntN(len(keys))]
					_, err = e.c.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: r.IntN(21) - 8, Reason: "race"})
					if errors.Is(err, holdfast.ErrInvalidArgument) {
						err = nil // below zero
					}
				case op < 96:
					k := keys[r.IntN(len(keys))]
					_, err = e.c.SetStrategy(ctx, k, mysql.Strategies()[r.IntN(len(mysql.Strategies()))], r.IntN(12))
				default:
					_, err = e.c.Replenish(ctx)
				}
				switch {
				case err == nil,
					errors.Is(err, holdfast.ErrInsufficientStock), errors.Is(err, holdfast.ErrHoldClaimed),
					errors.Is(err, holdfast.ErrHoldReleased), errors.Is(err, holdfast.ErrHoldExpired),
					errors.Is(err, holdfast.ErrOverCommitted), errors.Is(err, holdfast.ErrLifetimeExceeded):
				default:
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("seed %d: unexpected: %v", seed, err)
	}
	t.Logf("retries: %v", obs.snapshot())
	e.checkInvariant()
	// Everything swept and replenished, the accounts still close.
	e.clock.Advance(2 * time.Hour)
	for {
		n, err := e.c.SweepOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if _, err := e.c.Replenish(ctx); err != nil {
		t.Fatal(err)
	}
	e.checkInvariant()
	for _, k := range keys {
		if l := e.level(k); l.Held != 0 || l.Pooled > l.Available {
			t.Errorf("seed %d: after sweep: %+v", seed, l)
		}
	}
}

// TestBatchCombines: concurrent one-line reservations on a batch key are
// combined (some are granted by batches), each still gets its own answer,
// replays and conflicts inside a batch are answered like on the plain path,
// and the accounts close.
func TestBatchCombines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 16, holdfast.Config{Strategy: holdfast.StrategyBatch})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 500)
	const workers, rounds = 48, 12
	ids := make([]uuid.UUID, workers)
	for i := range ids {
		ids[i] = uuid.New()
	}
	var wg sync.WaitGroup
	var held atomic.Int64
	errs := make(chan error, workers*rounds)
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range rounds {
				id := uuid.New()
				if i%4 == 0 {
					id = ids[(w+i)%workers] // the same checkout from several goroutines: one hold
				}
				h, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
				switch {
				case err == nil && !h.Replayed:
					held.Add(1)
				case err == nil:
				default:
					errs <- err
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected: %v", err)
	}
	l := e.level(k)
	if int64(l.Held) != held.Load() {
		t.Fatalf("held %d, but %d reservations answered as new holds", l.Held, held.Load())
	}
	t.Logf("%d holds, %d granted by combined batches", held.Load(), mysql.CombinedGrants(e.c))
	if mysql.CombinedGrants(e.c) == 0 {
		t.Errorf("48 concurrent reservers on a batch key were never combined")
	}
	e.checkInvariant()
}

// TestConcurrentRetries: many concurrent retries of one checkout, on every
// strategy and for a two-line cart, make exactly one hold; every caller is
// answered with it (one new, the rest Replayed), and no units leak.
func TestConcurrentRetries(t *testing.T) {
	t.Parallel()
	for _, s := range mysql.Strategies() {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 16, holdfast.Config{})
			a := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			b := holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}
			for _, k := range []holdfast.Key{a, b} {
				e.stock(k, 20)
				e.strategy(k, s, 5)
			}
			for round := range 5 {
				id := uuid.New()
				lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}
				if round%2 == 1 {
					lines = append(lines, holdfast.Line{ItemID: 2, LocationID: 1, Quantity: 1})
				}
				const callers = 12
				var wg sync.WaitGroup
				var fresh, replayed atomic.Int64
				for range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						h, err := e.c.Reserve(context.Background(), holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: lines})
						switch {
						case err != nil:
							t.Errorf("round %d: %v", round, err)
						case h.Replayed:
							replayed.Add(1)
						default:
							fresh.Add(1)
						}
					}()
				}
				wg.Wait()
				if fresh.Load() != 1 || replayed.Load() != callers-1 {
					t.Fatalf("round %d: %d new holds, %d replays", round, fresh.Load(), replayed.Load())
				}
			}
			if la := e.level(a); la.Held != 10 || la.Available != 20 {
				t.Fatalf("level: %+v", la)
			}
			e.checkInvariant()
		})
	}
}
