package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// ClaimBatchMax bounds the claims one combined claim transaction serves.
const ClaimBatchMax = 256

// claimCombiner turns this client's concurrent claims (Claim, in the
// engine's own transaction) into one transaction per batch
// (driver.ClaimCombiner) when the driver offers it: one statement claims
// the batch's holds, one deducts their lines, each key's level row written
// once, and one commit — where claims on their own queue on a hot key's
// level row one commit at a time (issue #29 item 6, docs/PERFORMANCE.md).
// One batch runs at a time per client: the next gathers while it commits,
// and a batch spans every key, so a second would only wait on the first's
// level rows. Each caller still gets its own answer; a claim the batch
// does not serve (not held, locked by another transaction, a batch that
// failed) takes the plain path, where it answers as it always did. An
// uncontended claim takes the plain path at once.
type claimCombiner struct {
	mu      sync.Mutex
	running bool
	pending []*claimReq
}

type claimReq struct {
	req   driver.ClaimRequest
	done  chan batchResult // buffered: the batch never blocks on a caller
	state atomic.Int32     // reqQueued, then reqTaken or reqAbandoned (combine.go)
}

// claimCombined serves a claim through the claim combiner when the driver
// combines claims and another claim is in flight in this client (the
// caller counts itself in inflight for as long as it is). ok is false when
// the caller should take the plain path; doubt is then set when a batch
// may have claimed the hold already (its COMMIT went unacknowledged).
//
// waitsEnded: the batch already ended the waits the claim's keys can no
// longer serve (Claim does it otherwise).
func (c *Client[TTx]) claimCombined(ctx context.Context, cc driver.ClaimCombiner, shop int64, checkout uuid.UUID, inflight int64) (h *holdfast.Hold, err error, ok, doubt, waitsEnded bool) {
	cb := &c.claims
	cb.mu.Lock()
	if inflight <= 1 && !cb.running {
		cb.mu.Unlock()
		return nil, nil, false, false, false
	}
	r := &claimReq{req: driver.ClaimRequest{Shop: shop, Checkout: checkout}, done: make(chan batchResult, 1)}
	cb.pending = append(cb.pending, r)
	if !cb.running {
		cb.running = true
		go c.runClaimBatches(cc)
	}
	cb.mu.Unlock()
	res, err, ok, doubt := c.awaitBatch(ctx, holdfast.RouteClaim, r.done, &r.state)
	return res.h, err, ok, doubt, res.waitsEnded
}

// runClaimBatches serves the pending claims, a batch at a time, until none
// are left.
func (c *Client[TTx]) runClaimBatches(cc driver.ClaimCombiner) {
	cb := &c.claims
	for {
		cb.mu.Lock()
		if len(cb.pending) == 0 {
			cb.running = false
			cb.mu.Unlock()
			return
		}
		// Claims whose callers left are dropped here, before their batch
		// starts.
		batch := make([]*claimReq, 0, min(len(cb.pending), ClaimBatchMax))
		n := 0
		for _, r := range cb.pending {
			if len(batch) == ClaimBatchMax {
				break
			}
			n++
			if r.state.CompareAndSwap(reqQueued, reqTaken) {
				batch = append(batch, r)
			}
		}
		cb.pending = append(cb.pending[:0:0], cb.pending[n:]...)
		cb.mu.Unlock()
		if len(batch) > 0 {
			c.execClaimBatch(cc, batch)
		}
	}
}

// execClaimBatch runs batch's combined claim attempts under the retry
// policy and answers each claim: with its hold, or by sending it to the
// plain path.
func (c *Client[TTx]) execClaimBatch(cc driver.ClaimCombiner, batch []*claimReq) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*c.cfg.StatementTimeout)
	defer cancel()

	// A checkout twice in one batch: the first is served here, the rest
	// on the plain path, where they find it claimed.
	seen := make(map[checkoutKey]bool, len(batch))
	uniq := make([]*claimReq, 0, len(batch))
	reqs := make([]driver.ClaimRequest, 0, len(batch))
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

	var claimed []*holdfast.Hold
	var err error
	rt := c.core.NewRetrier(holdfast.RouteClaim)
	for {
		claimed, err = cc.CombinedClaimAttempt(ctx, reqs)
		if c.d.CommitUnacknowledged(err) {
			rt.Doubt = true
		}
		if err == nil {
			break
		}
		// A level row held past the batch's short lock wait (a caller's
		// transaction doing work before its commit) is not waited for
		// here: the claims go to the plain path, each under its caller's
		// own deadline. Re-running is safe even when a COMMIT's answer
		// was lost: holds it claimed are no longer held and are skipped,
		// and their claims find them claimed on the plain path.
		canRetry := !c.d.CombineLockBusy(err) && (c.d.Retryable(err) || c.d.ConnectionLost(err))
		if again, _ := rt.Again(ctx, err, canRetry); !again {
			break
		}
	}
	if err != nil {
		c.cfg.Logger.Debug("combined claim batch failed; its claims take the plain path", "claims", len(uniq), "err", err)
	} else {
		// Claimed units never come back: the waits that asked for them
		// end now, once for the batch's keys rather than once per claim
		// (a transaction each), and before any of its claims is answered,
		// as Claim does for a claim of its own.
		seenKey := map[holdfast.Key]bool{}
		var keys []holdfast.Key
		for _, h := range claimed {
			if h == nil {
				continue
			}
			for _, k := range KeysOf(h.ShopID, h.Lines) {
				if !seenKey[k] {
					seenKey[k] = true
					keys = append(keys, k)
				}
			}
		}
		if len(keys) > 0 {
			c.endUnservableOn(ctx, holdfast.RouteClaim, keys)
		}
	}
	for i, r := range uniq {
		// A failed batch fails no one: every claim is answered on its own
		// on the plain path, where a claim that caused the failure (an
		// over-committed key) fails alone.
		if err == nil && i < len(claimed) && claimed[i] != nil {
			r.done <- batchResult{h: claimed[i], waitsEnded: true}
		} else {
			r.done <- batchResult{plain: true, doubt: rt.Doubt}
		}
	}
}
