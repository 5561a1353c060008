package holdfast

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

// execBatch runs one combined transaction for batch and answers each request.
func (c *Client) execBatch(k Key, batch []*batchReq) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*c.cfg.StatementTimeout)
	defer cancel()

	// A checkout twice in one batch: the first is served here, the rest on
	// the plain path, where they find its hold.
	seen := make(map[uuid.UUID]bool, len(batch))
	var uniq []*batchReq
	for _, r := range batch {
		if seen[r.req.checkout] {
			r.done <- batchResult{plain: true}
			continue
		}
		seen[r.req.checkout] = true
		uniq = append(uniq, r)
	}

	results := make([]batchResult, len(uniq))
	err := c.run(ctx, c.pool, RouteReserve, true, true, func(tx pgx.Tx, _ bool) error {
		clear(results)
		units, err := c.batchUnits(ctx, tx, k)
		if err != nil {
			return err
		}
		granted := make([]bool, len(uniq))
		grant := func() (missing bool) {
			for i, r := range uniq {
				if granted[i] {
					continue
				}
				if q := r.req.lines[0].Quantity; q <= units {
					granted[i], units = true, units-q
				} else {
					missing = true
				}
			}
			return missing
		}
		sellable := -1 // available - held before this batch, when read
		if grant() {
			// Short: refill from the ledger under the key's lock when
			// there is unallocated stock, then grant again.
			s, err := c.sellable(ctx, tx, RouteReserve, k.ShopID, []Line{{ItemID: k.ItemID, LocationID: k.LocationID}})
			if err != nil {
				return err
			}
			sellable = s[0]
			if sellable > units {
				if _, err := tx.Exec(ctx, c.q(ctx, RouteReserve, "lock_key"), keyHash(k)); err != nil {
					return err
				}
				res, err := c.refill(ctx, tx, RouteReserve, []Key{k})
				if err != nil {
					return err
				}
				if res[0].added > 0 {
					c.cfg.Observer.Replenished(k, true, res[0].added)
					units += res[0].added
					grant()
				}
			}
		}

		var ids []uuid.UUID
		var qtys []int32
		var ttls []int64
		var refused []uuid.UUID
		for i, r := range uniq {
			if granted[i] {
				ids = append(ids, r.req.checkout)
				qtys = append(qtys, int32(r.req.lines[0].Quantity))
				ttls = append(ttls, r.req.ttl.Microseconds())
			} else {
				refused = append(refused, r.req.checkout)
			}
		}
		created := map[uuid.UUID]*Hold{}
		total := 0
		if len(ids) > 0 {
			rows, err := tx.Query(ctx, c.q(ctx, RouteReserve, "batch_create"),
				ids, qtys, ttls, k.ShopID, k.ItemID, k.LocationID, c.cfg.HoldLifetimeMax.Microseconds(), c.now())
			if err != nil {
				return err
			}
			for rows.Next() {
				h := &Hold{ShopID: k.ShopID, Status: StatusHeld}
				var q int
				if err := rows.Scan(&h.CheckoutID, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &q); err != nil {
					return err
				}
				h.Lines = []Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: q}}
				created[h.CheckoutID] = h
				total += q
			}
			if err := rows.Err(); err != nil {
				return err
			}
		}
		if total > 0 {
			if _, err := tx.Exec(ctx, c.q(ctx, RouteReserve, "batch_take"), k.ShopID, k.ItemID, k.LocationID, total); err != nil {
				return err
			}
		}
		// Refused checkouts that already exist are retries: the plain
		// path answers them with their hold or outcome.
		existing := map[uuid.UUID]bool{}
		if len(refused) > 0 {
			rows, err := tx.Query(ctx, c.q(ctx, RouteReserve, "holds_exist"), refused)
			if err != nil {
				return err
			}
			ex, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
			if err != nil {
				return err
			}
			for _, id := range ex {
				existing[id] = true
			}
		}
		left := max(0, sellable-total) // sellable after this batch
		for i, r := range uniq {
			l := r.req.lines[0]
			switch h, ok := created[r.req.checkout]; {
			case ok:
				results[i] = batchResult{h: h}
			case granted[i] || existing[r.req.checkout] || l.Quantity <= left:
				// A retry, or stock the counter row does not hold (the
				// key changed strategy, or units are in flight).
				results[i] = batchResult{plain: true}
			default:
				results[i] = batchResult{err: &InsufficientStockError{Lines: []Shortfall{{
					ItemID: l.ItemID, LocationID: l.LocationID, Requested: l.Quantity, Sellable: left,
				}}}}
			}
		}
		return nil
	})
	for i, r := range uniq {
		if err != nil {
			r.done <- batchResult{err: err}
		} else {
			r.done <- results[i]
		}
	}
}

// batchUnits locks the key's counter row and returns its units.
func (c *Client) batchUnits(ctx context.Context, tx pgx.Tx, k Key) (int, error) {
	var units int
	err := tx.QueryRow(ctx, c.q(ctx, RouteReserve, "batch_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&units)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return units, err
}
