package faulttest_test

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
	"github.com/holdfast/holdfast/postgres/faulttest"
)

// TestSoak runs mixed load for HOLDFAST_SOAK (a duration, e.g. 2h) with the
// background sweeper and replenisher, the injected clock running at ten
// times real time, and backends terminated at random now and then. Every
// HOLDFAST_SOAK_EVERY (default 1m) it reports throughput, latency, errors,
// dead tuples in holdfast's tables (and their drift) and an invariant
// check. Skipped unless HOLDFAST_SOAK is set.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("HOLDFAST_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set HOLDFAST_SOAK=<duration> to soak")
	}
	every := time.Minute
	if v, err := time.ParseDuration(os.Getenv("HOLDFAST_SOAK_EVERY")); err == nil && v > 0 {
		every = v
	}
	seed := faulttest.Seed(t)
	e := faulttest.New(t, faulttest.Options{MaxConns: 12, Config: func(c *holdfast.Config) {
		c.SweepInterval, c.ReplenishInterval = time.Second, time.Second
		c.PoolCap = 50
		c.Slots = 8
	}})
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var keys []holdfast.Key
	for i := range 24 {
		k := holdfast.Key{ShopID: 1, ItemID: int64(1000 + i), LocationID: 1}
		e.AddKey(k, faulttest.Strategies[i%len(faulttest.Strategies)], 500)
		keys = append(keys, k)
	}
	e.Client.Start(ctx)
	defer e.Client.Stop(context.Background()) //nolint:errcheck

	clockTick := time.NewTicker(100 * time.Millisecond)
	defer clockTick.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-clockTick.C:
				e.Clock.Advance(time.Second)
			}
		}
	}()
	stopKiller := e.StartKiller(5*time.Second, seed)
	defer stopKiller()

	var mu sync.Mutex
	var lat []time.Duration
	var ops, errs atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			timed := func(fn func() error) {
				start := time.Now()
				err := fn()
				el := time.Since(start)
				ops.Add(1)
				if err != nil && history.Classify(err) != history.ResInsufficient {
					errs.Add(1)
				}
				mu.Lock()
				lat = append(lat, el)
				mu.Unlock()
			}
			for ctx.Err() == nil {
				k := keys[r.IntN(len(keys))]
				co := uuid.New()
				lines := []holdfast.Line{{ItemID: k.ItemID, LocationID: 1, Quantity: 1 + r.IntN(3)}}
				var reserved bool
				timed(func() error {
					_, err := e.Client.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: co, Lines: lines, TTL: time.Duration(1+r.IntN(10)) * time.Minute})
					reserved = err == nil
					return err
				})
				if !reserved {
					if r.IntN(4) == 0 {
						timed(func() error { _, err := e.Client.Adjust(ctx, k, 50, "soak restock", ""); return err })
					}
					continue
				}
				switch x := r.IntN(10); {
				case x < 5:
					timed(func() error { _, err := e.Client.Claim(ctx, 1, co); return err })
				case x < 8:
					timed(func() error { _, err := e.Client.Release(ctx, 1, co); return err })
				case x < 9:
					timed(func() error { _, err := e.Client.Extend(ctx, 1, co, 5*time.Minute); return err })
				default: // abandoned: the sweeper expires it
				}
			}
		}()
	}

	deadTuples := func() int64 {
		var n int64
		_ = e.Admin.QueryRow(context.Background(), `SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables
WHERE relname IN ('holds', 'reserved_quantities', 'inventory_counters', 'inventory_levels')
   OR relname LIKE 'reservation_units%'`).Scan(&n)
		return n
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	start := time.Now()
	lastOps, lastErrs, lastDead := int64(0), int64(0), deadTuples()
	report := func() {
		mu.Lock()
		l := lat
		lat = nil
		mu.Unlock()
		slices.Sort(l)
		q := func(p float64) time.Duration {
			if len(l) == 0 {
				return 0
			}
			return l[min(len(l)-1, int(float64(len(l))*p))]
		}
		o, er, dead := ops.Load(), errs.Load(), deadTuples()
		rep, err := e.Checker.CheckInvariant(context.Background())
		inv := "ok"
		if err != nil {
			inv = "error: " + err.Error()
		} else if !rep.OK() {
			inv = "BROKEN: " + rep.String()
			t.Errorf("invariant broken during soak: %s", rep)
		}
		t.Logf("soak %6s: %7.1f ops/s  p50 %-9v p99 %-9v errors %d  dead tuples %d (drift %+d)  invariant %s",
			time.Since(start).Round(time.Second), float64(o-lastOps)/every.Seconds(), q(0.5), q(0.99),
			er-lastErrs, dead, dead-lastDead, inv)
		lastOps, lastErrs, lastDead = o, er, dead
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			report()
		}
	}
	wg.Wait()
	stopKiller()
	report()
	vctx, vcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer vcancel()
	if err := e.Client.Stop(vctx); err != nil {
		t.Logf("stop: %v", err)
	}
	e.Verify(vctx)
}
