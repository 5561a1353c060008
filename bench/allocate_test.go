package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestAllocationScenarios runs the allocation scenarios through the bench
// on every engine strategy (the baselines are skipped), a fixed number of
// attempts each: every attempt is a hold, nothing oversold, the audit
// clean. Rates are logged, never asserted.
func TestAllocationScenarios(t *testing.T) {
	t.Parallel()
	o := smokeOptions()
	o.Scenarios = AllocationScenarios()
	o.Strategies = []string{string(holdfast.StrategyBatch), string(holdfast.StrategyCounter), "pessimistic"}
	o.HotStock = 1000
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := 2 * 2; len(rep.Runs) != want {
		t.Fatalf("got %d runs, want %d (engine strategies only)", len(rep.Runs), want)
	}
	for _, r := range rep.Runs {
		t.Logf("%s/%s/c=%d: %d holds, %.0f holds/s, p50 %.2f ms", r.Strategy, r.Scenario, r.Clients, r.Holds, r.HoldsPerSec, r.P50ms)
		if r.Failed() || r.Errors != 0 || r.SoldOut != 0 || r.Holds != int64(smokeClients*smokeAttempts) {
			t.Errorf("%s/%s: %d holds, %d sold out, %d errors %v, problem %q", r.Strategy, r.Scenario, r.Holds, r.SoldOut, r.Errors, r.ErrorsByCode, r.Problem)
		}
	}
}

// BenchmarkAllocationRatio measures allocation over three candidate
// locations against a fixed-location reservation of the same item, paired:
// every iteration makes one of each (in alternating order), so load on the
// machine falls on both alike. It reports each one's mean and median
// latency and the ratios alloc3/fixed (issue #16's target: at most 2), on
// the batch strategy (where fixed one-line reservations meet the combiner
// under concurrency; allocated ones never do) and the counter strategy
// (both on the plain path).
//
//	go test -run '^$' -bench AllocationRatio -benchtime 2000x ./bench/
func BenchmarkAllocationRatio(b *testing.B) {
	for _, st := range []holdfast.Strategy{holdfast.StrategyBatch, holdfast.StrategyCounter} {
		for _, clients := range []int{1, 8} {
			benchAllocationRatio(b, st, clients)
		}
	}
}

func benchAllocationRatio(b *testing.B, st holdfast.Strategy, clients int) {
	b.Run(fmt.Sprintf("%s/c=%d", st, clients), func(b *testing.B) {
		ctx := context.Background()
		o := Options{HotStock: 10_000_000}
		sc, _ := allocScenario(ScenarioAlloc3, &o)
		db := pgtest.DB(b, clients+poolSlack)
		rs, err := openReserver(string(st), db.Pool, newCounters(), nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := rs.setup(ctx, sc.keys, sc.units); err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		var fixed, alloc []time.Duration
		per := b.N/clients + 1
		b.ResetTimer()
		var wg sync.WaitGroup
		for g := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 3))
				var f, a []time.Duration
				for i := range per {
					item := int64(1 + rng.IntN(allocItems))
					p := rng.Perm(3)
					ops := []struct {
						out   *[]time.Duration
						lines []holdfast.Line
					}{
						{&f, []holdfast.Line{{ItemID: item, LocationID: int64(p[0] + 1), Quantity: 1}}},
						{&a, []holdfast.Line{{ItemID: item, Quantity: 1, Candidates: holdfast.LocationsOf(int64(p[0]+1), int64(p[1]+1), int64(p[2]+1))}}},
					}
					if i%2 == 1 {
						ops[0], ops[1] = ops[1], ops[0]
					}
					for _, op := range ops {
						start := time.Now()
						if err := rs.reserve(ctx, benchShop, uuid.New(), op.lines); err != nil {
							b.Error(err)
							return
						}
						*op.out = append(*op.out, time.Since(start))
					}
				}
				mu.Lock()
				fixed, alloc = append(fixed, f...), append(alloc, a...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		b.StopTimer()
		if len(fixed) == 0 || len(alloc) == 0 {
			b.Fatal("nothing measured")
		}
		mean := func(d []time.Duration) float64 {
			var s time.Duration
			for _, x := range d {
				s += x
			}
			return float64(s) / float64(len(d)) / 1e6
		}
		median := func(d []time.Duration) float64 {
			slices.Sort(d)
			return float64(d[len(d)/2]) / 1e6
		}
		mf, ma, pf, pa := mean(fixed), mean(alloc), median(fixed), median(alloc)
		b.ReportMetric(mf, "fixed-ms")
		b.ReportMetric(ma, "alloc3-ms")
		b.ReportMetric(ma/mf, "mean-ratio")
		b.ReportMetric(pa/pf, "p50-ratio")
		if a, err := rs.audit(ctx); err != nil || a.oversold != 0 || a.problem != "" {
			b.Fatalf("audit %+v, %v", a, err)
		}
	})
}
