package pods_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pods"
)

// TestPodOutage stops one pod's server while shops on three pods trade:
// the stopped pod's shops are answered ErrUnavailable (a *PodError naming
// the pod), at once (< 1 s a call) after the breaker marks it down; the
// other pods' shops see zero errors throughout. When the server is back a
// probe brings the pod up and its shops trade again.
func TestPodOutage(t *testing.T) {
	ctx := context.Background()
	srvX, err := startServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srvX.stop()
	a, b, x := newPod(t, "a", serverA), newPod(t, "b", serverB), newPod(t, "x", srvX)
	m := newMap(t)
	r := newRouter(t, m, pods.Config{ProbeInterval: 100 * time.Millisecond}, a, b, x)
	place := map[int64]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "x", 6: "x"}
	for shop, p := range place {
		if _, err := m.Assign(ctx, shop, p); err != nil {
			t.Fatal(err)
		}
		stock(t, r, shop, 1_000_000)
	}

	type result struct {
		at      time.Time
		took    time.Duration
		err     error
		podDown bool // the router refused it without calling the pod
	}
	var (
		mu      sync.Mutex
		results = map[int64][]result{}
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	for shop := range place {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				start := time.Now()
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				h, err := r.Reserve(cctx, cart(shop))
				if err == nil {
					_, err = r.Release(cctx, shop, h.CheckoutID)
				}
				cancel()
				var pe *pods.PodError
				res := result{at: start, took: time.Since(start), err: err, podDown: errors.As(err, &pe)}
				mu.Lock()
				results[shop] = append(results[shop], res)
				mu.Unlock()
				if err != nil {
					time.Sleep(5 * time.Millisecond) // a client's pause before retrying
				}
			}
		}()
	}
	count := func(shop int64) int {
		mu.Lock()
		defer mu.Unlock()
		return len(results[shop])
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("traffic on every shop", func() bool {
		for shop := range place {
			if count(shop) < 20 {
				return false
			}
		}
		return true
	})
	srvX.kill(t)
	stoppedAt := time.Now() // the server has exited
	xDown := func() bool {
		for _, s := range r.Status() {
			if s.Name == "x" {
				return !s.Up
			}
		}
		return false
	}
	waitFor("pod x marked down", xDown)
	detected := time.Now()
	marks := map[int64]int{}
	for shop := range place {
		marks[shop] = count(shop)
	}
	waitFor("traffic after detection", func() bool {
		for shop := range place {
			if count(shop) < marks[shop]+20 {
				return false
			}
		}
		return true
	})
	// The server comes back: a probe brings the pod up. Until then (it
	// cannot be up before the server is) every call of x's shops is the
	// router's refusal.
	restarting := time.Now()
	srvX.restart(t)
	waitFor("pod x up again", func() bool { return !xDown() })
	back := time.Now()
	waitFor("pod x's shops trading again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, shop := range []int64{5, 6} {
			rs := results[shop]
			if len(rs) == 0 || rs[len(rs)-1].err != nil || rs[len(rs)-1].at.Before(back) {
				return false
			}
		}
		return true
	})
	trading := time.Since(back)
	stop.Store(true)
	wg.Wait()

	var slowest time.Duration
	refused := 0
	for shop, p := range place {
		for i, res := range results[shop] {
			if p != "x" {
				if res.err != nil {
					t.Errorf("shop %d on pod %s: call %d failed during pod x's outage: %v", shop, p, i, res.err)
				}
				continue
			}
			// Before detection a call in flight at the stop may also have
			// lost its commit's acknowledgement: outcome unknown, truthfully.
			if res.err != nil && !errors.Is(res.err, holdfast.ErrUnavailable) && !errors.Is(res.err, holdfast.ErrOutcomeUnknown) {
				t.Errorf("shop %d on pod x: %v, want ErrUnavailable", shop, res.err)
			}
			if res.at.After(detected) && res.at.Before(restarting) {
				if !res.podDown {
					t.Errorf("shop %d: call at +%v after detection reached the pod (%v), want refused by the router", shop, res.at.Sub(detected), res.err)
				}
				refused++
				slowest = max(slowest, res.took)
			}
		}
	}
	if refused == 0 {
		t.Fatal("no call of pod x's shops was made while it was down")
	}
	if slowest >= time.Second {
		t.Errorf("pod x's shops waited up to %v for their answer while it was down, want < 1s", slowest)
	}
	t.Logf("pod x's server exited; marked down %v later; %d calls of its shops refused while down, slowest %v; other pods' shops: %d calls, 0 errors; trading again within %v of the probe",
		detected.Sub(stoppedAt).Round(time.Millisecond), refused, slowest, count(1)+count(2)+count(3)+count(4), trading.Round(time.Millisecond))
}
