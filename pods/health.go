package pods

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/holdfast/holdfast"
)

// pod is one configured pod with its health: a circuit breaker that marks
// the pod down after Config.FailuresToDown consecutive failures of its
// engine (ErrUnavailable, ErrOutcomeUnknown or a deadline that ran out in
// it), answers its shops ErrUnavailable at once while it is down, and
// probes it in the background (Config.ProbeInterval) until a probe
// succeeds.
type pod struct {
	name string
	eng  holdfast.Engine
	ping func(context.Context) error

	// max bounds the calls in flight on the pod (Pod.MaxInFlight; 0:
	// unbounded).
	max int64

	down      atomic.Bool
	fails     atomic.Int32
	probing   atomic.Bool
	checking  atomic.Bool  // a watchdog probe of a silent pod is running
	refused   atomic.Int64 // calls turned away (down, or at max)
	inflight  atomic.Int64
	busySince atomic.Int64 // unix ns when inflight last went from 0 to 1
	lastDone  atomic.Int64 // unix ns when a call last returned
	mu        sync.Mutex
	since     time.Time // when it last changed state
	lastErr   string
	downings  int64
}

// failure reports whether err says the pod itself failed, as opposed to an
// answer (a refusal, a validation error, not found, a shop that moved) or
// a caller that went away (context.Canceled).
func failure(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, holdfast.ErrShopMoved) {
		// A fenced or moved shop is the pod answering, not failing: it
		// must not take the pod's other shops down with it.
		return false
	}
	return errors.Is(err, holdfast.ErrUnavailable) || errors.Is(err, holdfast.ErrOutcomeUnknown) ||
		errors.Is(err, context.DeadlineExceeded)
}

// observe records the outcome of one call to the pod's engine; it reports
// whether this call marked the pod down.
func (p *pod) observe(err error, threshold int) bool {
	if !failure(err) {
		if p.fails.Load() != 0 {
			p.fails.Store(0)
		}
		return false
	}
	if n := p.fails.Add(1); int(n) < threshold || p.down.Load() {
		return false
	}
	return p.markDown(err)
}

// markDown marks the pod down; it reports whether this call did.
func (p *pod) markDown(err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down.Load() {
		return false
	}
	p.down.Store(true)
	p.since = time.Now()
	p.lastErr = err.Error()
	p.downings++
	return true
}

// up marks the pod up after a probe succeeded.
func (p *pod) up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fails.Store(0)
	p.down.Store(false)
	p.since = time.Now()
}

// PodStatus is one pod's health as the router sees it.
type PodStatus struct {
	Name string `json:"name"`
	// Up is false while the breaker turns the pod's shops away.
	Up bool `json:"up"`
	// Since is when the pod last went down or came back (zero: never).
	Since time.Time `json:"since,omitzero"`
	// LastError is the failure that marked it down last.
	LastError string `json:"last_error,omitempty"`
	// Downs counts how often it was marked down; Refused the calls turned
	// away (down, or at its in-flight bound).
	Downs   int64 `json:"downs"`
	Refused int64 `json:"refused"`
	// InFlight is the calls on the pod now.
	InFlight int64 `json:"in_flight"`
}

func (p *pod) status() PodStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PodStatus{Name: p.name, Up: !p.down.Load(), Since: p.since, LastError: p.lastErr, Downs: p.downings, Refused: p.refused.Load(), InFlight: p.inflight.Load()}
}

// PodError is the router's own answer for a shop whose pod cannot be used:
// down (its breaker is open), or not configured here. It matches
// holdfast.ErrUnavailable (the HTTP layer answers 503 with Retry-After):
// nothing was sent to the pod, nothing changed; retry later with the same
// checkout id.
type PodError struct {
	Pod string
	// Err is holdfast.ErrUnavailable, or ErrUnknownPod wrapped in it.
	Err error
}

func (e *PodError) Error() string { return "pods: pod " + e.Pod + ": " + e.Err.Error() }

func (e *PodError) Unwrap() error { return e.Err }

var (
	errPodDown = fmt.Errorf("%w: the pod is down (its recent calls failed; it is being probed)", holdfast.ErrUnavailable)
	errPodFull = fmt.Errorf("%w: the pod has as many calls in flight as it may (it is slow or hung)", holdfast.ErrUnavailable)
)

// admit answers nil when the pod may be called — then the caller must call
// done when the call returns — else a *PodError at once: the pod is down,
// or bounded and the pod has MaxInFlight calls in flight already.
func (p *pod) admit(bounded bool) error {
	if p.down.Load() {
		p.refused.Add(1)
		return &PodError{Pod: p.name, Err: errPodDown}
	}
	n := p.inflight.Add(1)
	if bounded && p.max > 0 && n > p.max {
		p.inflight.Add(-1)
		p.refused.Add(1)
		return &PodError{Pod: p.name, Err: errPodFull}
	}
	if n == 1 {
		p.busySince.Store(time.Now().UnixNano())
	}
	return nil
}

func (p *pod) done() {
	p.lastDone.Store(time.Now().UnixNano())
	p.inflight.Add(-1)
}

// silent reports whether the pod has calls in flight and none has returned
// for at least d: a hung pod (a server that stopped answering without
// closing its connections) fails no call until each one's deadline.
func (p *pod) silent(now time.Time, d time.Duration) bool {
	if p.inflight.Load() == 0 || p.down.Load() {
		return false
	}
	last := max(p.busySince.Load(), p.lastDone.Load())
	return now.UnixNano()-last >= int64(d)
}
