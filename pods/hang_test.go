package pods_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pods"
)

// TestPodHangs freezes one pod's server (SIGSTOP: connections stay open,
// nothing answers) while shops on three pods trade: the hung pod holds at
// most MaxInFlight calls (the rest of its shops' calls are refused at
// once), the watchdog finds it silent and marks it down after a failed
// probe — well before the calls' own deadlines — and from then its shops
// are refused at once; the other pods' shops see zero errors. Thawed, a
// probe brings it back.
func TestPodHangs(t *testing.T) {
	ctx := context.Background()
	srvX, err := startServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srvX.stop()
	// Pod x runs the counter strategy: none of its reservations is
	// combined, so every call counts against its MaxInFlight.
	a, b, x := newPod(t, "a", serverA), newPod(t, "b", serverB), newPodWith(t, "x", srvX, holdfast.Config{Strategy: holdfast.StrategyCounter})
	m := newMap(t)
	list := []pods.Pod{a.pod(), b.pod(), x.pod()}
	const maxInFlight = 3
	list[2].MaxInFlight = maxInFlight
	r, err := pods.New(ctx, m, list, pods.Config{ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 500 * time.Millisecond, SilentAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Stop(context.Background()) }()
	place := map[int64]string{1: "a", 2: "b", 3: "x", 4: "x"}
	for shop, p := range place {
		if _, err := m.Assign(ctx, shop, p); err != nil {
			t.Fatal(err)
		}
		stock(t, r, shop, 1_000_000)
	}
	const callTimeout = 10 * time.Second
	type result struct {
		at, end time.Time
		err     error
	}
	var (
		mu       sync.Mutex
		results  = map[int64][]result{}
		stop     atomic.Bool
		wg       sync.WaitGroup
		maxSeen  atomic.Int64
		thawOnce sync.Once
	)
	thaw := func() { thawOnce.Do(func() { srvX.signalAll(t, syscall.SIGCONT) }) }
	defer thaw()
	workers := map[int64]int{1: 2, 2: 2, 3: 4, 4: 4} // 8 on pod x, more than its bound
	for shop, n := range workers {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					start := time.Now()
					cctx, cancel := context.WithTimeout(ctx, callTimeout)
					h, err := r.Reserve(cctx, cart(shop))
					if err == nil {
						_, err = r.Release(cctx, shop, h.CheckoutID)
					}
					cancel()
					for _, s := range r.Status() {
						if s.Name == "x" && s.InFlight > maxSeen.Load() {
							maxSeen.Store(s.InFlight)
						}
					}
					mu.Lock()
					results[shop] = append(results[shop], result{at: start, end: time.Now(), err: err})
					mu.Unlock()
					if err != nil {
						time.Sleep(5 * time.Millisecond)
					}
				}
			}()
		}
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
				thaw()
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
	xDown := func() bool {
		for _, s := range r.Status() {
			if s.Name == "x" {
				return !s.Up
			}
		}
		return false
	}
	srvX.signalAll(t, syscall.SIGSTOP)
	frozen := time.Now()
	waitFor("pod x marked down", xDown)
	detected := time.Now()
	marks := map[int64]int{1: count(1), 2: count(2)}
	waitFor("traffic after detection", func() bool { return count(1) >= marks[1]+20 && count(2) >= marks[2]+20 })
	// Calls made after detection were refused at once.
	downWindowEnd := time.Now()
	thaw()
	waitFor("pod x up again", func() bool { return !xDown() })
	stop.Store(true)
	wg.Wait()

	if d := detected.Sub(frozen); d >= callTimeout {
		t.Errorf("pod x marked down %v after it hung: not before the calls' own %v deadline", d, callTimeout)
	}
	if maxSeen.Load() > maxInFlight {
		t.Errorf("pod x had %d calls in flight, its bound is %d", maxSeen.Load(), maxInFlight)
	}
	refused, slowest := 0, time.Duration(0)
	for shop, p := range place {
		for _, res := range results[shop] {
			if p != "x" {
				if res.err != nil {
					t.Errorf("shop %d on pod %s failed while pod x hung: %v", shop, p, res.err)
				}
				continue
			}
			if res.err != nil && !errors.Is(res.err, holdfast.ErrUnavailable) && !errors.Is(res.err, holdfast.ErrOutcomeUnknown) && !errors.Is(res.err, context.DeadlineExceeded) {
				t.Errorf("shop %d on pod x: %v", shop, res.err)
			}
			if res.at.After(detected) && res.at.Before(downWindowEnd) {
				var pe *pods.PodError
				if !errors.As(res.err, &pe) {
					t.Errorf("shop %d: a call after detection was not refused by the router: %v", shop, res.err)
				}
				refused++
				slowest = max(slowest, res.end.Sub(res.at))
			}
		}
	}
	if refused == 0 {
		t.Fatal("no call of pod x's shops was made while it was down")
	}
	if slowest >= time.Second {
		t.Errorf("refused calls took up to %v, want < 1s", slowest)
	}
	t.Logf("pod x hung (SIGSTOP); marked down %v later (watchdog: silent 1s + a failed 500ms probe); at most %d calls in flight on it (bound %d); %d calls refused after detection, slowest %v; other pods: %d calls, 0 errors",
		detected.Sub(frozen).Round(time.Millisecond), maxSeen.Load(), maxInFlight, refused, slowest, count(1)+count(2))
}
