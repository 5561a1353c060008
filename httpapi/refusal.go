package httpapi

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Bounds of refusing unauthenticated requests.
const (
	// RefusalDelayDefault is how long a refusal of an unauthenticated
	// request (Config.RefusalDelay) is held before it is answered.
	RefusalDelayDefault = time.Second
	// RefusalsHeldMax bounds the refusals held at once; past it a refusal
	// is answered at once (a held refusal costs a goroutine and a
	// connection, no CPU).
	RefusalsHeldMax = 10_000
)

// refusals holds the answers to requests whose key is missing, malformed,
// unknown or could not be looked up (401, or 503 when the key lookups are
// past their bound) for a delay before they are sent. The server's cost of
// a bad-key request is in reading, routing and answering it; a flood's
// clients wait for each answer before they send again, so holding the
// answer (a timer, no CPU) cuts the rate of bad-key requests the server
// reads from each flooding client to one per delay, and with it their
// share of the CPU that authenticated shops need. A caller with a mistyped
// key learns it a delay later. It is safe for concurrent use.
type refusals struct {
	delay time.Duration
	held  atomic.Int64
}

// hold waits for the delay (jittered by ±50%, so a flood's clients do not
// come back in step), or until ctx ends, unless RefusalsHeldMax refusals
// are held already.
func (r *refusals) hold(ctx context.Context) {
	if r.delay <= 0 {
		return
	}
	if r.held.Add(1) > RefusalsHeldMax {
		r.held.Add(-1)
		return
	}
	defer r.held.Add(-1)
	t := time.NewTimer(r.delay/2 + rand.N(r.delay))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
