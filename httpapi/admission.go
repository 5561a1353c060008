package httpapi

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of admission.
const (
	// QueueMax bounds the requests waiting for a connection slot in the
	// whole server; past it a request is turned away at once with 503
	// overloaded.
	QueueMax = 4096
	// CombineInFlightMax bounds the combinable reservations (one line, on a
	// key the engine combines) admitted without a connection slot: they
	// wait in the engine's combiner, which serves up to
	// holdfast.CombineBatchMax of them per transaction. Past it they take
	// the slot queue like any other request.
	CombineInFlightMax = 1024
)

// admission bounds the connections the API's database work holds, not its
// requests. Config.MaxInFlight slots stand for connections. A request that
// needs its own connection takes a slot at once when one is free and nobody
// waits, else it waits in its shop's queue; a freed slot goes to the next
// shop in round-robin order among the shops with waiters. So one shop alone
// may use every slot (work-conserving), and when shops compete each gets an
// equal share of the turns, whatever its queue length.
//
// A request is turned away (503 overloaded with Retry-After) only when it
// cannot be served within its own deadline: at once when the observed queue
// (waiters ahead × the mean slot hold time / slots) says it would not make
// it, or when its deadline passes while it waits. Requests that join a
// combined batch skip the slots entirely (see CombineInFlightMax). It is
// safe for concurrent use.
type admission struct {
	mu       sync.Mutex
	capacity int
	free     int
	queueMax int
	queued   int
	ring     []*shopQueue // shops with waiters, in round-robin order
	next     int          // index in ring of the shop served next
	shops    map[int64]*shopQueue
	hold     time.Duration // moving average of how long a slot is held

	combining atomic.Int64
	// granted counts slots handed out, waited counts those that waited:
	// metrics and tests.
	granted, waited, refused atomic.Int64
}

type shopQueue struct {
	shop    int64
	waiters []*waiter // FIFO
}

type waiter struct {
	shop    int64
	ready   chan struct{}
	granted bool // under admission.mu
}

func newAdmission(capacity, queueMax int) *admission {
	return &admission{capacity: capacity, free: capacity, queueMax: queueMax, shops: map[int64]*shopQueue{}}
}

// estimate is how long a request with ahead requests before it would wait
// for a slot, from the observed mean hold time. Under a.mu.
func (a *admission) estimate(ahead int) time.Duration {
	return time.Duration(float64(a.hold) * float64(ahead) / float64(a.capacity))
}

// acquire takes a connection slot for shop, waiting in the shop's queue
// while ctx allows. The returned func gives the slot back.
func (a *admission) acquire(ctx context.Context, shop int64) (func(), *apiError) {
	a.mu.Lock()
	if a.free > 0 && a.queued == 0 {
		a.free--
		a.mu.Unlock()
		a.granted.Add(1)
		return a.releaser(), nil
	}
	// It will wait behind everyone queued, and then do its own work.
	wait := a.estimate(a.queued + 1)
	if deadline, ok := ctx.Deadline(); a.queued >= a.queueMax || ok && time.Until(deadline) < wait+a.hold {
		a.mu.Unlock()
		a.refused.Add(1)
		return nil, overloaded(wait, "the server cannot serve this request within its deadline")
	}
	w := &waiter{shop: shop, ready: make(chan struct{})}
	q := a.shops[shop]
	if q == nil {
		q = &shopQueue{shop: shop}
		a.shops[shop] = q
		a.ring = append(a.ring, q)
	}
	q.waiters = append(q.waiters, w)
	a.queued++
	a.mu.Unlock()

	select {
	case <-w.ready:
		a.granted.Add(1)
		a.waited.Add(1)
		return a.releaser(), nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	if w.granted {
		// Granted while giving up: pass the slot on.
		a.mu.Unlock()
		a.release(0)
	} else {
		a.remove(w)
		wait = a.estimate(a.queued)
		a.mu.Unlock()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		a.refused.Add(1)
		return nil, overloaded(wait, "the server could not serve this request within its deadline")
	}
	return nil, toAPIError("", ctx.Err())
}

func (a *admission) releaser() func() {
	start := time.Now()
	var once sync.Once
	return func() { once.Do(func() { a.release(time.Since(start)) }) }
}

// release gives a slot held for d back: to the next shop's first waiter
// in round-robin order, or to the free slots.
func (a *admission) release(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d > 0 {
		if a.hold == 0 {
			a.hold = d
		} else {
			a.hold += (d - a.hold) / 8
		}
	}
	if a.queued == 0 {
		a.free++
		return
	}
	if a.next >= len(a.ring) {
		a.next = 0
	}
	q := a.ring[a.next]
	w := q.waiters[0]
	q.waiters = q.waiters[1:]
	a.queued--
	if len(q.waiters) == 0 {
		a.dropShop(a.next)
	} else {
		a.next++
	}
	w.granted = true
	close(w.ready)
}

// remove takes a waiter that gave up out of its queue. Under a.mu.
func (a *admission) remove(w *waiter) {
	q := a.shops[w.shop]
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			a.queued--
			break
		}
	}
	if len(q.waiters) == 0 {
		for i, x := range a.ring {
			if x == q {
				a.dropShop(i)
				if i < a.next {
					a.next--
				}
				break
			}
		}
	}
}

// dropShop removes the empty queue at ring index i; the shop after it
// becomes ring[i], so next stays where it is. Under a.mu.
func (a *admission) dropShop(i int) {
	delete(a.shops, a.ring[i].shop)
	a.ring = append(a.ring[:i], a.ring[i+1:]...)
}

// admitCombined admits a combinable reservation without a slot when fewer
// than CombineInFlightMax are in flight; ok false means take a slot.
func (a *admission) admitCombined() (done func(), ok bool) {
	if a.combining.Add(1) > CombineInFlightMax {
		a.combining.Add(-1)
		return nil, false
	}
	return func() { a.combining.Add(-1) }, true
}

// waiting reports the requests waiting for a slot.
func (a *admission) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queued
}

// overloaded is 503 with a Retry-After of the estimated wait (at least a
// second).
func overloaded(wait time.Duration, msg string) *apiError {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	return &apiError{Status: http.StatusServiceUnavailable, Code: CodeOverloaded,
		Message: msg + "; retry in " + strconv.Itoa(secs) + "s", RetryAfter: secs}
}
