package maint

import (
	"context"
	"testing"
	"time"
)

// TestWorkerTicks: the first tick runs at Start (not one Interval later),
// Kick and WakeIn bring a tick forward, Next shortens the wait, and Stop is
// idempotent and safe before Start. Waits are on signals, bounded generously; the one-hour
// Interval is never waited for.
func TestWorkerTicks(t *testing.T) {
	var never Worker
	if err := never.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ticks := make(chan int, 10)
	batches := 0
	w := &Worker{Name: "test", Interval: time.Hour, Step: func(context.Context) (bool, error) {
		batches++
		if batches == 1 || batches > BatchesPerTickMax {
			ticks <- batches
			return false, nil
		}
		// A backlog on the first tick: every batch full, cut at the bound.
		return true, nil
	}}
	w.Start(context.Background())
	wait := func(what string) int {
		t.Helper()
		select {
		case n := <-ticks:
			return n
		case <-time.After(time.Minute):
			t.Fatalf("no tick: %s", what)
		}
		return 0
	}
	if n := wait("first tick at Start"); n != 1 {
		t.Fatalf("first step %d", n)
	}
	w.Kick()
	// The kicked tick works through its backlog of full batches.
	if n := wait("kick"); n != BatchesPerTickMax+1 {
		t.Fatalf("the kicked tick ended at batch %d, want %d", n, BatchesPerTickMax+1)
	}
	w.WakeIn(10 * time.Millisecond)
	wait("WakeIn")
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	next := make(chan struct{}, 10)
	w2 := &Worker{Name: "next", Interval: time.Hour, Step: func(context.Context) (bool, error) {
		next <- struct{}{}
		return false, nil
	}, Next: func() time.Duration { return 10 * time.Millisecond }}
	w2.Start(context.Background())
	defer w2.Stop(context.Background()) //nolint:errcheck
	for i := range 3 {
		select {
		case <-next:
		case <-time.After(time.Minute):
			t.Fatalf("tick %d: Next did not shorten the wait", i)
		}
	}
}
