package faulttest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/faulttest"
)

// Every request is sent eight times at once with the same checkout id (a
// client retrying on a timeout while its first attempt is still running),
// with backends terminated at random meanwhile. Of each burst at most one
// reserve, and at most one claim or release, does the work (not Replayed);
// every unit is accounted for.
var _ = scenario("storm/concurrent-retries", func(t *testing.T) {
	seed := faulttest.Seed(t)
	for _, s := range faulttest.Strategies {
		e := faulttest.New(t, faulttest.Options{Strategy: s, MaxConns: 12})
		ctx := context.Background()
		k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
		e.AddKey(k, s, 30)
		e.Hook.SetPauses(0.3, 2*time.Millisecond, seed)
		stop := e.StartKiller(30*time.Millisecond, seed)
		const dup = 8
		for i := range rounds(6) {
			co := uuid.New()
			lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1 + i%3}}
			e.Register(1, co, lines)
			burst := func(fn func(context.Context) (*holdfast.Hold, error)) (fresh, ok int) {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for range dup {
					wg.Add(1)
					go func() {
						defer wg.Done()
						h, err := fn(ctx)
						mu.Lock()
						defer mu.Unlock()
						if err == nil {
							ok++
							if !h.Replayed {
								fresh++
							}
						}
					}()
				}
				wg.Wait()
				e.Tally.Inject("client retry storm (concurrent duplicates)", dup-1)
				return fresh, ok
			}
			fresh, ok := burst(func(ctx context.Context) (*holdfast.Hold, error) {
				return e.Reserve(ctx, 0, 1, co, lines, time.Minute)
			})
			if fresh > 1 {
				e.Violation("%s: %d of %d concurrent reserves of one checkout created a hold", s, fresh, ok)
			}
			end := e.Claim
			if i%2 == 1 {
				end = e.Release
			}
			fresh, ok = burst(func(ctx context.Context) (*holdfast.Hold, error) { return end(ctx, 0, 1, co) })
			if fresh > 1 {
				e.Violation("%s: %d of %d concurrent claims/releases of one checkout did the work", s, fresh, ok)
			}
		}
		stop()
		e.Hook.SetPauses(0, 0, 0)
		e.Verify(ctx)
	}
})
