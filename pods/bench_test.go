package pods_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pods"
)

// BenchmarkRouterOverhead measures the router against the same pod's engine
// called directly, within one run: every iteration runs one block of
// reserve+release cycles on each (8 workers × 25 cycles), alternating which
// goes first, and the totals give direct_us/cycle, router_us/cycle and
// router/direct. hot: every cycle on one shop's one key; spread: 64 shops.
//
//	go test -run '^$' -bench RouterOverhead -benchtime 40x ./pods/
func BenchmarkRouterOverhead(b *testing.B) {
	for _, shape := range []struct {
		name  string
		shops int
	}{{"hot", 1}, {"spread", 64}} {
		b.Run(shape.name, func(b *testing.B) {
			ctx := context.Background()
			a := newPod(b, "a", serverA)
			r := newRouter(b, newMap(b), pods.Config{}, a)
			shops := make([]int64, shape.shops)
			for i := range shops {
				shops[i] = int64(i + 1)
				stock(b, r, shops[i], 1_000_000)
			}
			const workers, cycles = 8, 25
			block := func(e holdfast.Engine) time.Duration {
				start := time.Now()
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range cycles {
							shop := shops[(w*cycles+i)%len(shops)]
							h, err := e.Reserve(ctx, cart(shop))
							if err == nil {
								_, err = e.Release(ctx, shop, h.CheckoutID)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				return time.Since(start)
			}
			block(a.eng) // warm both paths' connections and the cache
			block(r)
			var direct, routed time.Duration
			b.ResetTimer()
			for i := range b.N {
				if i%2 == 0 {
					direct += block(a.eng)
					routed += block(r)
				} else {
					routed += block(r)
					direct += block(a.eng)
				}
			}
			n := float64(b.N * workers * cycles)
			b.ReportMetric(float64(direct.Microseconds())/n, "direct_us/cycle")
			b.ReportMetric(float64(routed.Microseconds())/n, "router_us/cycle")
			b.ReportMetric(float64(routed)/float64(direct), "router/direct")
		})
	}
}

// BenchmarkPlacementCached is the router's per-call cost of finding a
// shop's pod when the placement is cached (the steady state): what the
// router adds to every call besides its breaker's atomic loads.
//
//	go test -run '^$' -bench PlacementCached ./pods/
func BenchmarkPlacementCached(b *testing.B) {
	ctx := context.Background()
	a := newPod(b, "a", serverA)
	r := newRouter(b, newMap(b), pods.Config{CacheTTL: pods.CacheTTLMax}, a)
	stock(b, r, 1, 1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.Placement(ctx, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
