package mysql_test

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
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// BenchmarkAllocationRatio measures allocation over three candidate
// locations against a fixed-location reservation of the same item on
// MariaDB, paired: every iteration makes one of each (in alternating
// order), so load on the machine falls on both alike. Reports each one's
// mean latency and the ratios alloc3/fixed (issue #16's target: at most 2).
//
//	go test -run '^$' -bench AllocationRatio -benchtime 1000x ./mysql/
func BenchmarkAllocationRatio(b *testing.B) {
	const items = 200
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprintf("c=%d", clients), func(b *testing.B) {
			ctx := context.Background()
			db := mysqltest.DB(b, clients+4)
			c, err := mysql.New(db.DB, holdfast.Config{})
			if err != nil {
				b.Fatal(err)
			}
			n := 10_000_000
			for item := int64(1); item <= items; item++ {
				for loc := int64(1); loc <= 3; loc++ {
					if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: item, LocationID: loc}, Set: &n, Reason: "bench"}); err != nil {
						b.Fatal(err)
					}
				}
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
						item := int64(1 + rng.IntN(items))
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
							if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: op.lines}); err != nil {
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
			mf, ma := mean(fixed), mean(alloc)
			b.ReportMetric(mf, "fixed-ms")
			b.ReportMetric(ma, "alloc3-ms")
			b.ReportMetric(ma/mf, "mean-ratio")
			b.ReportMetric(median(alloc)/median(fixed), "p50-ratio")
			if rep, err := c.CheckInvariant(ctx); err != nil || !rep.OK() {
				b.Fatalf("invariant: %v %v", rep, err)
			}
		})
	}
}
