package enginetest

import (
	"maps"
	"slices"
	"sync"

	"github.com/holdfast/holdfast/internal/history"
)

// Concurrent sweeps in the history test: expiry racing merges, claims,
// releases, extends, edits, reserves and cancels, not only between epochs.
// A sweep skips holds whose rows are locked (FOR UPDATE SKIP LOCKED), so
// it is recorded as a partial sweep (history.Input.Partial) that may have
// skipped the checkouts with an operation in flight while it ran, or any
// checkout while an admin cancel (which locks the holds of a key) ran.

// histBusy tracks the checkouts with operations in flight. Safe for
// concurrent use; the zero value is ready.
type histBusy struct {
	mu       sync.Mutex
	inflight map[int]int
	all      int // cancels in flight
	sweeps   map[*histSweep]bool
	// sweeping: a concurrent sweep runs. One at a time: two sweeps skip
	// each other's rows, which the model does not describe.
	sweeping bool
}

// histSweep is what one concurrent sweep may have skipped.
type histSweep struct {
	cos map[int]bool
	all bool
}

// enter marks operations on cos in flight; leave is their end.
func (b *histBusy) enter(cos ...int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inflight == nil {
		b.inflight = map[int]int{}
	}
	for _, co := range cos {
		b.inflight[co]++
		for sw := range b.sweeps {
			sw.cos[co] = true
		}
	}
}

func (b *histBusy) leave(cos ...int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, co := range cos {
		if b.inflight[co]--; b.inflight[co] == 0 {
			delete(b.inflight, co)
		}
	}
}

// enterAll marks an operation on any checkout in flight (an admin cancel);
// leaveAll is its end.
func (b *histBusy) enterAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all++
	for sw := range b.sweeps {
		sw.all = true
	}
}

func (b *histBusy) leaveAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all--
}

// sweepHistory runs one SweepOnce while other operations run and records
// it as a concurrent sweep; it reports false when another concurrent
// sweep was running (it then runs none).
func sweepHistory(e *env, hist *history.History, w int, busy *histBusy, bad *errorSink) bool {
	sw := &histSweep{cos: map[int]bool{}}
	busy.mu.Lock()
	if busy.sweeping {
		busy.mu.Unlock()
		return false
	}
	busy.sweeping = true
	for co := range busy.inflight {
		sw.cos[co] = true
	}
	sw.all = busy.all > 0
	if busy.sweeps == nil {
		busy.sweeps = map[*histSweep]bool{}
	}
	busy.sweeps[sw] = true
	busy.mu.Unlock()
	now := e.Clock.Now()
	call := hist.Now()
	_, err := e.e.SweepOnce(ctxb())
	busy.mu.Lock()
	delete(busy.sweeps, sw)
	busy.sweeping = false
	busy.mu.Unlock()
	out := history.Output{Result: history.Classify(err)}
	if out.Result == history.ResUntyped {
		bad.add("concurrent sweep: %v", err)
	}
	in := history.Input{Op: history.OpSweep, Key: -1, Now: now.UnixMicro(), Partial: true}
	if sw.all || len(sw.cos) > history.SkipMax {
		in.SkipAll = true
	} else {
		for _, co := range slices.Sorted(maps.Keys(sw.cos)) {
			in.Skip[in.NSkip] = co
			in.NSkip++
		}
	}
	hist.Add(w, in, call, out)
	return true
}
