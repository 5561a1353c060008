package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// CombineBatchMax bounds the reservations one combined transaction serves.
const CombineBatchMax = 256

// CombineRunnersMax bounds the combined transactions in flight at once
// from one client: while one commits, the next executes, on other keys or
// — where the driver's batches overlap (driver.Reserver.CombineOverlap) —
// on the same key (see runBatches). Drivers lock counter rows in key
// and slot order, so they never deadlock each other.
const CombineRunnersMax = 2

// combiner turns the contended reservations on batch keys from this
// client into one transaction per batch (driver.Reserver.CombinedAttempt)
// — one commit for up to CombineBatchMax reservations over any keys. Every
// request is still granted or refused on its own (all-or-nothing,
// idempotent on its checkout), and each caller gets its own answer. An
// uncontended request takes the plain path, so keys are combined while
// contention shows and stop being combined as soon as it cools.
type combiner struct {
	mu      sync.Mutex
	running int // batch runners, at most CombineRunnersMax
	// stripes marks the stripes of the running batches: each has its own
	// (driver.Reserver.CombinedAttempt), so no two batches running at once
	// share one. lastStripe is the one the last batch took: a batch takes
	// the other when both are free, so that one runner alone still
	// alternates them and a key's counter rows drain evenly.
	stripes    [CombineRunnersMax]bool
	lastStripe int
	pending    []*batchReq
	// busy counts the running batches of each key. A key is in at most
	// the driver's CombineOverlap running batches: its requests that
	// arrive meanwhile wait in pending for a runner that has it, and join
	// that runner's next batch, rather than start another batch that would
	// only wait on the same counter rows (see runBatches).
	busy map[holdfast.Key]int
}

// checkoutKey identifies a checkout: ids are scoped per shop.
type checkoutKey struct {
	shop     int64
	checkout uuid.UUID
}

type batchReq struct {
	key   holdfast.Key
	req   *driver.Reservation
	done  chan batchResult // buffered: the batch never blocks on a caller
	state atomic.Int32     // reqQueued, then reqTaken (by a batch) or reqAbandoned (by its caller)
	// refused, once a batch committed without granting it for want of
	// units on its stripe while the key's other row had them (execBatch),
	// is that stripe + 1: the request is queued again for one more batch,
	// on another stripe (runBatches).
	refused int
}

// A request's state: it is either taken by a batch or abandoned by its
// caller, never both, so a caller that leaves before its batch starts is
// truthfully told nothing happened, and one that leaves after is told the
// outcome is unknown.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

type batchResult struct {
	h *holdfast.Hold
	// plain asks the caller to resolve the request on the plain path: short
	// of units, a checkout that already has a hold or outcome, a duplicate
	// within the batch, or a batch that failed (one request's failure is
	// then its own, on the plain path, never the others').
	plain bool
	// doubt: a COMMIT of this batch went unacknowledged, so the request's
	// hold may exist although the batch does not report it. The plain path
	// is then a retry that finds it; a caller that cannot run it any more
	// must answer ErrOutcomeUnknown.
	doubt bool
	// waitsEnded (claims): the batch ended the waits its claimed keys can
	// no longer serve (Waits.EndUnservable) before answering, so the
	// caller does not.
	waitsEnded bool
}

// CombinerLoad reports c's combiner's queued requests and running batch
// runners (for tests and diagnostics). A function, not a method: the
// drivers' clients embed Client and must not offer it.
func CombinerLoad[TTx comparable](c *Client[TTx]) (pending, running int) {
	c.combiner.mu.Lock()
	defer c.combiner.mu.Unlock()
	return len(c.combiner.pending), c.combiner.running
}

// nextStripe is the stripe the next batch takes (useStripe): a free
// one, the one after the last batch's first (cb.mu held; a runner runs
// one batch at a time, so one is free).
func (cb *combiner) nextStripe() int {
	for i := 1; i <= CombineRunnersMax; i++ {
		if s := (cb.lastStripe + i) % CombineRunnersMax; !cb.stripes[s] {
			return s
		}
	}
	panic("holdfast: more combined batches than CombineRunnersMax")
}

// useStripe marks stripe s used by a batch (cb.mu held).
func (cb *combiner) useStripe(s int) {
	cb.stripes[s], cb.lastStripe = true, s
}

// freeStripeBut reports whether a stripe other than s is free (cb.mu
// held).
func (cb *combiner) freeStripeBut(s int) bool {
	for i, used := range cb.stripes {
		if i != s && !used {
			return true
		}
	}
	return false
}

// reserveCombined serves req through the combiner when another combinable
// reservation is in flight in this client (the caller counts itself in
// inflight for as long as it is). ok is false when the caller should take
// the plain path; doubt is then set when a batch may have created the hold
// already (see batchResult.doubt).
func (c *Client[TTx]) reserveCombined(ctx context.Context, k holdfast.Key, req *driver.Reservation, inflight int64) (h *holdfast.Hold, err error, ok, doubt bool) {
	cb := &c.combiner
	cb.mu.Lock()
	if inflight <= 1 && cb.running == 0 {
		cb.mu.Unlock()
		return nil, nil, false, false
	}
	r := &batchReq{key: k, req: req, done: make(chan batchResult, 1)}
	cb.pending = append(cb.pending, r)
	// A busy key's runner takes the request when its batch ends.
	if cb.running < CombineRunnersMax && cb.busy[k] < c.d.CombineOverlap(k) {
		cb.running++
		go c.runBatches()
	}
	cb.mu.Unlock()
	res, err, ok, doubt := c.awaitBatch(ctx, holdfast.RouteReserve, r.done, &r.state)
	return res.h, err, ok, doubt
}

// awaitBatch waits for the batch that serves a queued request (reserve or
// claim) to answer it, or for its caller to leave, and says what the
// caller answers: res.h when a batch served it; err when the answer is
// decided without one (nothing happened: the caller left before any batch
// took the request; or unknown: it left while its batch ran, or after a
// COMMIT went unacknowledged); ok false sends the caller to the plain
// path, doubt set when a batch may have done the work already.
func (c *Client[TTx]) awaitBatch(ctx context.Context, route string, done <-chan batchResult, state *atomic.Int32) (res batchResult, err error, ok, doubt bool) {
	answer := func(res batchResult) (batchResult, error, bool, bool) {
		switch {
		case !res.plain:
			return res, nil, true, false
		case res.doubt && ctx.Err() != nil:
			return batchResult{}, fmt.Errorf("%w: %s: the combined commit was not acknowledged and the caller left: %v", holdfast.ErrOutcomeUnknown, route, ctx.Err()), true, true
		}
		return batchResult{}, nil, false, res.doubt
	}
	select {
	case res := <-done:
		return answer(res)
	case <-ctx.Done():
		if state.CompareAndSwap(reqQueued, reqAbandoned) {
			// No batch took it, and none will: nothing happened.
			return batchResult{}, c.core.MapErr(route, ctx.Err(), true, true), true, false
		}
		select {
		case res := <-done:
			return answer(res)
		default:
		}
		// Its batch is running and may commit the work: a retry finds it
		// done (a hold found by its checkout id, a claim replayed) or does
		// it.
		return batchResult{}, fmt.Errorf("%w: %s: the caller left while its combined batch ran: %v", holdfast.ErrOutcomeUnknown, route, ctx.Err()), true, false
	}
}

// runBatches serves the pending requests, a batch at a time, until none are
// left. While a batch runs, the next one gathers.
//
// A runner leaves out of its batch the requests of keys that are in as
// many running batches as the driver overlaps (combiner.busy): where a
// batch locks its keys' counter rows first, two batches on one key would
// lock the same rows, so the second would only wait, holding a connection,
// with fewer requests than it could have had, and past CombineLockWait
// send them all to the plain path. Left in pending, they join the busy
// key's runner's next batch. A request a batch refused on its stripe
// (execBatch: the key's other row had its units) is left likewise for a
// batch on the other stripe. Measured on PostgreSQL's hot key at 64
// clients, counter rows first: 1.20–2.38× the holds/s with one batch per
// key at a time (docs/PERFORMANCE.md, "Where the hot key's time goes").
func (c *Client[TTx]) runBatches() {
	cb := &c.combiner
	mine := map[holdfast.Key]bool{} // the keys this runner's last batch made busy
	held := -1                      // its stripe
	for {
		cb.mu.Lock()
		if held >= 0 {
			cb.stripes[held], held = false, -1
		}
		for k := range mine {
			if cb.busy[k]--; cb.busy[k] <= 0 {
				delete(cb.busy, k)
			}
		}
		clear(mine)
		if len(cb.pending) == 0 {
			cb.running--
			cb.mu.Unlock()
			return
		}
		// Requests whose callers left are dropped here, before their
		// batch starts. A request a batch on this stripe refused waits
		// for a batch on another.
		stripe := cb.nextStripe()
		batch := make([]*batchReq, 0, min(len(cb.pending), CombineBatchMax))
		var later []*batchReq // requests of keys busy in another runner's batch, or refused on this stripe
		n, refused := 0, false
		for _, r := range cb.pending {
			if len(batch) == CombineBatchMax {
				break
			}
			n++
			if cb.busy[r.key] >= c.d.CombineOverlap(r.key) || r.refused == stripe+1 {
				if r.state.Load() == reqQueued {
					later = append(later, r)
					refused = refused || r.refused == stripe+1
				}
				continue
			}
			if r.state.CompareAndSwap(reqQueued, reqTaken) {
				batch = append(batch, r)
			}
		}
		cb.pending = append(later, cb.pending[n:]...)
		if len(batch) == 0 && len(later) > 0 {
			if refused && cb.freeStripeBut(stripe) {
				// Requests this stripe refused, and no batch on the
				// other: this runner's next batch takes it.
				cb.lastStripe = stripe
				cb.mu.Unlock()
				continue
			}
			// Every request left waits for a busy key, or for the other
			// stripe: the runner that has it takes them when its batch
			// ends.
			cb.running--
			cb.mu.Unlock()
			return
		}
		if cb.busy == nil {
			cb.busy = make(map[holdfast.Key]int)
		}
		for _, r := range batch {
			if !mine[r.key] {
				mine[r.key] = true
				cb.busy[r.key]++
			}
		}
		if len(batch) > 0 {
			cb.useStripe(stripe)
			held = stripe
		}
		cb.mu.Unlock()
		if len(batch) > 0 {
			c.execBatch(batch, stripe)
		}
	}
}

// execBatch runs batch's combined attempts under the retry policy and
// answers each request: with its hold, or by sending it to the plain path.
func (c *Client[TTx]) execBatch(batch []*batchReq, stripe int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*c.cfg.StatementTimeout)
	defer cancel()

	// A checkout twice in one batch: the first is served here, the rest on
	// the plain path, where they find its hold.
	seen := make(map[checkoutKey]bool, len(batch))
	uniq := make([]*batchReq, 0, len(batch))
	reqs := make([]*driver.Reservation, 0, len(batch))
	for _, r := range batch {
		ck := checkoutKey{r.req.Shop, r.req.Checkout}
		if seen[ck] {
			r.done <- batchResult{plain: true}
			continue
		}
		seen[ck] = true
		uniq = append(uniq, r)
		reqs = append(reqs, r.req)
	}

	var created []*holdfast.Hold
	var elsewhere []bool
	var err error
	rt := c.core.NewRetrier(holdfast.RouteReserve)
	for {
		created, elsewhere, err = c.d.CombinedAttempt(ctx, reqs, stripe)
		if c.d.CommitUnacknowledged(err) {
			rt.Doubt = true
		}
		if err == nil {
			break
		}
		// A counter row held past the batch's short lock wait (a caller's
		// ReserveTx doing work before its commit) is not waited for here:
		// the requests go to the plain path, where only those of that
		// key wait, each under its caller's own deadline. Re-running is
		// safe even when a COMMIT's answer was lost: the holds it created
		// are skipped, and their requests find them on the plain path.
		canRetry := !c.d.CombineLockBusy(err) && (c.d.Retryable(err) || c.d.ConnectionLost(err))
		if again, _ := rt.Again(ctx, err, canRetry); !again {
			break
		}
	}
	if err != nil {
		c.cfg.Logger.Debug("combined batch failed; its requests take the plain path", "requests", len(uniq), "err", err)
	}
	var again []*batchReq
	for i, r := range uniq {
		// A failed batch fails no one: every request is answered on its
		// own on the plain path, where a request that caused the failure
		// fails alone.
		switch {
		case err == nil && i < len(created) && created[i] != nil:
			h := created[i]
			h.ShopID, h.CheckoutID, h.Lines = r.req.Shop, r.req.Checkout, r.req.Lines
			r.done <- batchResult{h: h}
		case err == nil && !rt.Doubt && r.refused == 0 && i < len(elsewhere) && elsewhere[i]:
			// Not granted by a batch that committed for certain: nothing
			// happened to it. Its stripe's row was short while the key's
			// other row had the units (near a sell-out): it joins one
			// more batch, which alternates stripes, before the plain
			// path, where each request is a transaction of its own. A
			// request whose key was short on every row goes to the plain
			// path at once (it refills the key, or answers sold out).
			r.refused = stripe + 1
			again = append(again, r)
		default:
			r.done <- batchResult{plain: true, doubt: rt.Doubt}
		}
	}
	if len(again) > 0 {
		cb := &c.combiner
		cb.mu.Lock()
		for _, r := range again {
			r.state.Store(reqQueued)
		}
		cb.pending = append(again, cb.pending...) // first: they came first
		cb.mu.Unlock()
	}
}
