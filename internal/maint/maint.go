// Package maint runs holdfast's background services (sweeper, replenisher,
// samplers) with one start/stop shape: Start does not block, Stop is
// idempotent, safe before Start and bounded by its context. The first tick
// runs at Start; then a jittered ticker (or an earlier wake-up the service
// asks for) drives a step that works in bounded batches until a batch comes
// back short.
package maint

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// BatchesPerTickMax bounds the batches one tick runs, so a backlog never
// turns a worker into one long-running loop that starves shutdown.
const BatchesPerTickMax = 1000

// Worker runs Step at Start and then every Interval (±10% jitter), or
// sooner: when Next, called after each tick, returns a shorter positive
// wait, or when WakeIn asks for an earlier tick. Step returns whether a full
// batch was done (so more work may be waiting, and Step runs again at once,
// at most BatchesPerTickMax times per tick).
type Worker struct {
	Name     string
	Interval time.Duration
	Step     func(ctx context.Context) (more bool, err error)
	// Next, when set, is the wait before the next tick as the service sees
	// it (0: no opinion); the shorter of it and Interval is used.
	Next   func() time.Duration
	Logger *slog.Logger

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	kick    chan struct{}
	wakeAt  time.Time
	stopped bool
}

// Start launches the worker; its first tick runs at once. Calling it on a
// started worker does nothing.
func (w *Worker) Start(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil || w.stopped {
		return
	}
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	w.done = make(chan struct{})
	w.kick = make(chan struct{}, 1)
	go w.loop(ctx)
}

// Kick asks a started worker to run a tick now.
func (w *Worker) Kick() { w.WakeIn(0) }

// WakeIn asks a started worker to run a tick no later than d from now. It
// never delays a tick already due sooner, and does not block.
func (w *Worker) WakeIn(d time.Duration) {
	at := time.Now().Add(d)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kick == nil {
		return
	}
	if w.wakeAt.IsZero() || at.Before(w.wakeAt) {
		w.wakeAt = at
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// Stop cancels the worker and waits for its current step to end, or for ctx.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	w.stopped = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Worker) loop(ctx context.Context) {
	defer close(w.done)
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	next := time.Now() // the first tick at Start
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.kick:
			t.Stop()
			w.mu.Lock()
			if at := w.wakeAt; !at.IsZero() && at.Before(next) {
				next = at
			}
			w.mu.Unlock()
			continue
		case <-t.C:
		}
		w.mu.Lock()
		w.wakeAt = time.Time{}
		w.mu.Unlock()
		w.RunOnce(ctx, log)
		d := w.Interval
		if d > 0 {
			d = d*9/10 + rand.N(d/5+1)
		}
		if w.Next != nil {
			if n := w.Next(); n > 0 && n < d {
				d = n
			}
		}
		next = time.Now().Add(d)
		w.mu.Lock()
		if at := w.wakeAt; !at.IsZero() && at.Before(next) {
			next = at
		}
		w.mu.Unlock()
	}
}

// RunOnce runs Step until it reports no more work, an error, or the batch
// bound.
func (w *Worker) RunOnce(ctx context.Context, log *slog.Logger) {
	for range BatchesPerTickMax {
		more, err := w.Step(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("maintenance step failed", "worker", w.Name, "err", err)
			}
			return
		}
		if !more || ctx.Err() != nil {
			return
		}
	}
}
