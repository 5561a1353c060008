package holdfast

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// CombineBatchMax bounds the reservations one combined transaction serves.
const CombineBatchMax = 256

// combiner turns a batch key's contended reservations from this process into
// one transaction per batch: the counter row is locked once, every request
// is granted or refused on its own (all-or-nothing, idempotent on its
// checkout), and each caller gets its own answer. An uncontended request
// takes the plain path, so a key is promoted to combining while contention
// shows and demoted as soon as it cools.
type combiner struct {
	inflight atomic.Int64
	mu       sync.Mutex
	running  bool
	pending  []*batchReq
}

type batchReq struct {
	req  *reservation
	done chan batchResult // buffered: the batch never blocks on a caller
}

type batchResult struct {
	h   *Hold
	err error
	// plain asks the caller to resolve the request on the plain path: a
	// checkout that already has a hold or outcome, or a duplicate within
	// the batch.
	plain bool
}

// reserveCombined serves req through the key's combiner when another
// reservation of the key is in flight in this process. ok is false when the
// caller should take the plain path.
func (c *Client) reserveCombined(ctx context.Context, k Key, req *reservation) (h *Hold, err error, ok bool) {
	v, _ := c.combiners.LoadOrStore(k, &combiner{})
	cb := v.(*combiner)
	n := cb.inflight.Add(1)
	defer cb.inflight.Add(-1)
	cb.mu.Lock()
	if n == 1 && !cb.running {
		cb.mu.Unlock()
		return nil, nil, false
	}
	r := &batchReq{req: req, done: make(chan batchResult, 1)}
	cb.pending = append(cb.pending, r)
	if !cb.running {
		cb.running = true
		go c.runBatches(cb, k)
	}
	cb.mu.Unlock()
	select {
	case res := <-r.done:
		if res.plain {
			return nil, nil, false
		}
		return res.h, res.err, true
	case <-ctx.Done():
		// The batch may still create the hold: like a lost reply, a
		// retry with the same checkout id finds it.
		return nil, ctx.Err(), true
	}
}

// runBatches serves the combiner's pending requests, a batch at a time,
// until none are left.
func (c *Client) runBatches(cb *combiner, k Key) {
	for {
		cb.mu.Lock()
		if len(cb.pending) == 0 {
			cb.running = false
			if cb.inflight.Load() == 0 {
				c.combiners.CompareAndDelete(k, cb)
			}
			cb.mu.Unlock()
			return
		}
		batch := cb.pending[:min(len(cb.pending), CombineBatchMax)]
		cb.pending = cb.pending[len(batch):]
		cb.mu.Unlock()
		c.execBatch(k, batch)
	}
}

// execBatch runs one combined statement for batch, in autocommit (one round
// trip, one commit), and answers each request: with its hold, or by sending
// it to the plain path (short of units, or an existing checkout).
func (c *Client) execBatch(k Key, batch []*batchReq) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*c.cfg.StatementTimeout)
	defer cancel()

	// A checkout twice in one batch: the first is served here, the rest on
	// the plain path, where they find its hold.
	seen := make(map[uuid.UUID]bool, len(batch))
	var uniq []*batchReq
	ids := make([]uuid.UUID, 0, len(batch))
	qtys := make([]int32, 0, len(batch))
	ttls := make([]int64, 0, len(batch))
	for _, r := range batch {
		if seen[r.req.checkout] {
			r.done <- batchResult{plain: true}
			continue
		}
		seen[r.req.checkout] = true
		uniq = append(uniq, r)
		ids = append(ids, r.req.checkout)
		qtys = append(qtys, int32(r.req.lines[0].Quantity))
		ttls = append(ttls, r.req.ttl.Microseconds())
	}

	created := make(map[uuid.UUID]*Hold, len(uniq))
	err := c.runStatement(ctx, RouteReserve, func() error {
		clear(created)
		rows, err := c.pool.Query(ctx, c.q(ctx, RouteReserve, "batch_reserve"),
			ids, qtys, ttls, k.ShopID, k.ItemID, k.LocationID, c.cfg.HoldLifetimeMax.Microseconds(), c.now())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			h := &Hold{ShopID: k.ShopID, Status: StatusHeld}
			var q int
			if err := rows.Scan(&h.CheckoutID, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &q); err != nil {
				return err
			}
			h.Lines = []Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: q}}
			created[h.CheckoutID] = h
		}
		return rows.Err()
	})
	for _, r := range uniq {
		switch h, ok := created[r.req.checkout]; {
		case err != nil:
			r.done <- batchResult{err: err}
		case ok:
			r.done <- batchResult{h: h}
		default:
			r.done <- batchResult{plain: true}
		}
	}
}

// runStatement runs one autocommit statement with the retry policy of run:
// it is its own transaction, so a retry re-runs all of it. The caller's
// statement must be idempotent (batch_reserve is: it skips checkouts that
// exist).
func (c *Client) runStatement(ctx context.Context, route string, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		if !(retryable(err) || connectionLost(err)) || attempt >= c.cfg.RetryMax || ctx.Err() != nil {
			return c.mapErr(route, err, true, true)
		}
		state := SQLState(err)
		if state == "" {
			state = "connection"
		}
		c.cfg.Observer.Retry(route, state)
		if err := c.backoff(ctx, attempt+1); err != nil {
			return c.mapErr(route, err, true, true)
		}
	}
}
