package faulttest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
	"github.com/holdfast/holdfast/postgres/faulttest"
)

// Every request is sent eight times at once with the same checkout id (a
// client retrying on a timeout while its first attempt is still running),
// with backends terminated at random meanwhile. Of each burst exactly one
// reserve, and exactly one claim or release, does the work (not Replayed)
// — none only when that one's answer was lost; every other answer is
// success or an unknown outcome;
// every unit is accounted for.
var _ = scenario("storm/concurrent-retries", func(t *testing.T) {
	seed := faulttest.Seed(t)
	for _, s := range faulttest.Strategies {
		var retries sync.Map
		e := faulttest.New(t, faulttest.Options{Strategy: s, MaxConns: 12, Config: func(c *holdfast.Config) {
			c.Observer = retryCounter{&retries}
		}})
		retried := func() int {
			n := 0
			retries.Range(func(_, v any) bool { n += v.(int); return true })
			return n
		}
		ctx := context.Background()
		k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
		// Enough stock for every round (at most 3 units each): a sold-out
		// answer is then a wrong answer.
		e.AddKey(k, s, 3*rounds(6)+10)
		e.Hook.SetPauses(0.3, 2*time.Millisecond, seed)
		stop := e.StartKiller(30*time.Millisecond, seed)
		const dup = 8
		for i := range rounds(6) {
			co := uuid.New()
			lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1 + i%3}}
			e.Register(1, co, lines)
			// burst returns how many calls did the work (not Replayed),
			// succeeded, and ended with an unknown outcome; any other
			// answer is a violation.
			// notFound: the checkout may have no hold (no reserve of it
			// was acknowledged).
			burst := func(notFound bool, fn func(context.Context) (*holdfast.Hold, error)) (fresh, ok, unknown int) {
				before := retried()
				defer func() {
					// A call the engine retried after a lost answer is
					// told Replayed although its first attempt did the
					// work (finding 4): count it as not told.
					if retried() > before {
						unknown++
					}
				}()
				var wg sync.WaitGroup
				var mu sync.Mutex
				for range dup {
					wg.Add(1)
					go func() {
						defer wg.Done()
						h, err := fn(ctx)
						mu.Lock()
						defer mu.Unlock()
						switch history.Classify(err) {
						case history.ResOK:
							ok++
							if !h.Replayed {
								fresh++
							}
						case history.ResUnknown:
							unknown++
						case history.ResNotFound:
							if !notFound {
								e.Violation("%s: a duplicate in a retry storm found no hold of an acknowledged reservation: %v", s, err)
							}
						default:
							e.Violation("%s: a duplicate in a retry storm: %v", s, err)
						}
					}()
				}
				wg.Wait()
				e.Tally.Inject("client retry storm (concurrent duplicates)", dup-1)
				return fresh, ok, unknown
			}
			// Exactly one call does the work; none only when the one that
			// did was not told (its outcome unknown, or the engine retried
			// it after a lost answer).
			exact := func(what string, fresh, ok, unknown int) {
				if fresh > 1 || (ok > 0 && fresh == 0 && unknown == 0) {
					e.Violation("%s: %d of %d successful concurrent %s of one checkout did the work (%d unknown); want exactly one", s, fresh, ok, what, unknown)
				}
			}
			fresh, ok, unknown := burst(false, func(ctx context.Context) (*holdfast.Hold, error) {
				return e.Reserve(ctx, 0, 1, co, lines, time.Minute)
			})
			exact("reserves", fresh, ok, unknown)
			if ok > 0 {
				if h, err := e.Checker.Hold(ctx, 1, co); err != nil || h.Status != holdfast.StatusHeld {
					e.Violation("%s: reserve storm acknowledged, the hold is %+v %v", s, h, err)
				}
			}
			end := e.Claim
			if i%2 == 1 {
				end = e.Release
			}
			reserved := ok > 0
			fresh, ok, unknown = burst(!reserved, func(ctx context.Context) (*holdfast.Hold, error) { return end(ctx, 0, 1, co) })
			exact("claims/releases", fresh, ok, unknown)
		}
		stop()
		e.Hook.SetPauses(0, 0, 0)
		e.Verify(ctx)
	}
})
