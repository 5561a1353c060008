package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
	"github.com/jackc/pgx/v5"
)

// CombineBatchMax bounds the reservations one combined transaction serves.
const CombineBatchMax = 256

// combiner turns the contended reservations on batch keys from this
// process into one statement per batch — one transaction, one commit, for
// up to CombineBatchMax reservations over any keys. Every request is still
// granted or refused on its own (all-or-nothing, idempotent on its
// checkout), and each caller gets its own answer. An uncontended request
// takes the plain path, so keys are combined while contention shows and
// stop being combined as soon as it cools.
type combiner struct {
	mu      sync.Mutex
	running int // batch runners, at most CombineRunnersMax
	pending []*batchReq
	// busy holds the keys of the batches running now. A key is in one
	// running batch at a time: its requests that arrive meanwhile wait in
	// pending for the runner that has it, and join that runner's next
	// batch, rather than start a second batch that would only wait on the
	// same counter rows (see runBatches).
	busy map[holdfast.Key]bool
}

// CombineRunnersMax bounds the combined transactions in flight at once
// from one client: while one commits, the next executes, on other keys (a
// key is in one running batch at a time, see runBatches). They lock counter
// rows in key order, so they never deadlock each other.
const CombineRunnersMax = 2

// checkoutKey identifies a checkout: ids are scoped per shop.
type checkoutKey struct {
	shop     int64
	checkout uuid.UUID
}

type batchReq struct {
	key   holdfast.Key
	req   *reservation
	done  chan batchResult // buffered: the batch never blocks on a caller
	state atomic.Int32     // reqQueued, then reqTaken (by a batch) or reqAbandoned (by its caller)
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
}

// reserveCombined serves req through the combiner when another combinable
// reservation is in flight in this process (the caller counts itself in
// inflight, the engine's count, for as long as it is). ok is false when the caller
// should take the plain path; doubt is then set when a batch may have
// created the hold already (see batchResult.doubt).
func (c *Client) reserveCombined(ctx context.Context, k holdfast.Key, req *reservation, inflight int64) (h *holdfast.Hold, err error, ok, doubt bool) {
	cb := &c.combiner
	cb.mu.Lock()
	if inflight <= 1 && cb.running == 0 {
		cb.mu.Unlock()
		return nil, nil, false, false
	}
	r := &batchReq{key: k, req: req, done: make(chan batchResult, 1)}
	cb.pending = append(cb.pending, r)
	// A busy key's runner takes the request when its batch ends.
	if cb.running < CombineRunnersMax && !cb.busy[k] {
		cb.running++
		go c.runBatches()
	}
	cb.mu.Unlock()
	answer := func(res batchResult) (*holdfast.Hold, error, bool, bool) {
		switch {
		case !res.plain:
			return res.h, nil, true, false
		case res.doubt && ctx.Err() != nil:
			return nil, fmt.Errorf("%w: %s: the combined commit was not acknowledged and the caller left: %v", holdfast.ErrOutcomeUnknown, holdfast.RouteReserve, ctx.Err()), true, true
		}
		return nil, nil, false, res.doubt
	}
	select {
	case res := <-r.done:
		return answer(res)
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			// No batch took it, and none will: nothing happened.
			return nil, c.mapErr(holdfast.RouteReserve, ctx.Err(), true, true), true, false
		}
		select {
		case res := <-r.done:
			return answer(res)
		default:
		}
		// Its batch is running and may commit the hold: a retry with the
		// same checkout id finds it (or finds nothing, and reserves).
		return nil, fmt.Errorf("%w: %s: the caller left while its combined batch ran: %v", holdfast.ErrOutcomeUnknown, holdfast.RouteReserve, ctx.Err()), true, false
	}
}

// runBatches serves the pending requests, a batch at a time, until none are
// left. While a batch runs, the next one gathers.
//
// A runner leaves out of its batch the requests of keys another runner's
// batch has (combiner.busy): two batches on one key would lock the same
// counter rows, so the second would only wait, holding a connection, with
// fewer requests than it could have had, and past CombineLockWait send them
// all to the plain path. Left in pending, they join the busy key's runner's
// next batch. Measured on the hot key at 64 clients: 1.20–2.38× the holds/s
// with one batch per key at a time (docs/PERFORMANCE.md, "Where the hot
// key's time goes").
func (c *Client) runBatches() {
	cb := &c.combiner
	var mine []holdfast.Key // the keys this runner's last batch made busy
	for {
		cb.mu.Lock()
		for _, k := range mine {
			delete(cb.busy, k)
		}
		mine = mine[:0]
		if len(cb.pending) == 0 {
			cb.running--
			cb.mu.Unlock()
			return
		}
		// Requests whose callers left are dropped here, before their
		// batch starts.
		batch := make([]*batchReq, 0, min(len(cb.pending), CombineBatchMax))
		var later []*batchReq // requests of keys busy in another runner's batch
		n := 0
		for _, r := range cb.pending {
			if len(batch) == CombineBatchMax {
				break
			}
			n++
			if cb.busy[r.key] {
				if r.state.Load() == reqQueued {
					later = append(later, r)
				}
				continue
			}
			if r.state.CompareAndSwap(reqQueued, reqTaken) {
				batch = append(batch, r)
			}
		}
		cb.pending = append(later, cb.pending[n:]...)
		if len(batch) == 0 && len(later) > 0 {
			// Every request left waits for a busy key: its runner
			// takes them when its batch ends.
			cb.running--
			cb.mu.Unlock()
			return
		}
		if cb.busy == nil {
			cb.busy = make(map[holdfast.Key]bool)
		}
		for _, r := range batch {
			if !cb.busy[r.key] {
				cb.busy[r.key] = true
				mine = append(mine, r.key)
			}
		}
		cb.mu.Unlock()
		if len(batch) > 0 {
			c.execBatch(batch)
		}
	}
}

// execBatch runs one transaction for batch — lock the keys' counter rows,
// grant, create the holds and take their units — and answers each request:
// with its hold, or by sending it to the plain path.
func (c *Client) execBatch(batch []*batchReq) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*c.cfg.StatementTimeout)
	defer cancel()

	// A checkout twice in one batch: the first is served here, the rest on
	// the plain path, where they find its hold.
	seen := make(map[checkoutKey]bool, len(batch))
	uniq := make([]*batchReq, 0, len(batch))
	n := len(batch)
	ids, qtys, ttls := make([]uuid.UUID, 0, n), make([]int32, 0, n), make([]int64, 0, n)
	shops, items, locs := make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	for _, r := range batch {
		ck := checkoutKey{r.req.Shop, r.req.Checkout}
		if seen[ck] {
			r.done <- batchResult{plain: true}
			continue
		}
		seen[ck] = true
		uniq = append(uniq, r)
		ids = append(ids, r.req.Checkout)
		qtys = append(qtys, int32(r.req.Lines[0].Quantity))
		ttls = append(ttls, r.req.TTL.Microseconds())
		shops, items, locs = append(shops, r.key.ShopID), append(items, r.key.ItemID), append(locs, r.key.LocationID)
	}

	var created map[checkoutKey]*holdfast.Hold
	var err error
	r := c.core.NewRetrier(holdfast.RouteReserve)
	for {
		created, err = c.batchOnce(ctx, uniq, ids, qtys, ttls, shops, items, locs)
		if commitUnacknowledged(err) {
			r.Doubt = true
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
		canRetry := SQLState(err) != sqlstateLockNotAvailable && (retryable(err) || connectionLost(err))
		if again, _ := r.Again(ctx, err, canRetry); !again {
			break
		}
	}
	doubt := r.Doubt
	if err != nil {
		c.cfg.Logger.Debug("combined batch failed; its requests take the plain path", "requests", len(uniq), "err", err)
	}
	for _, r := range uniq {
		// A failed batch fails no one: every request is answered on its
		// own on the plain path, where a request that caused the failure
		// fails alone.
		if h, ok := created[checkoutKey{r.req.Shop, r.req.Checkout}]; ok && err == nil {
			h.ShopID, h.Lines = r.req.Shop, r.req.Lines
			r.done <- batchResult{h: h}
		} else {
			r.done <- batchResult{plain: true, doubt: doubt}
		}
	}
}

// batchOnce runs one combined transaction in two round trips: BEGIN, its
// bounds and the counter locks (batch_lock.sql) in one pipeline; then the
// holds (batch_reserve.sql) and COMMIT in another, so the counter rows are
// held for one round trip and the commit.
func (c *Client) batchOnce(ctx context.Context, uniq []*batchReq, ids []uuid.UUID, qtys []int32, ttls, shops, items, locs []int64) (map[checkoutKey]*holdfast.Hold, error) {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// Release destroys the connection unless it is idle and healthy, so a
	// failure anywhere below never leaks an open transaction.
	defer conn.Release()

	b := &pgx.Batch{}
	b.Queue(c.comment(ctx, holdfast.RouteReserve) + "BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(c.q(ctx, holdfast.RouteReserve, "set_local"), c.combineLockWait, c.setLocal[1], c.setLocal[2])
	b.Queue(c.q(ctx, holdfast.RouteReserve, "batch_lock"), shops, items, locs)
	br := conn.SendBatch(ctx, b)
	units := map[holdfast.Key]int{}
	err = func() error {
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var k holdfast.Key
			var u int
			if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &u); err != nil {
				return err
			}
			units[k] = u
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, err
	}

	// Grant each key's requests in arrival order while they fit.
	var gIDs []string // as text: pgx's exec mode (PgBouncer) cannot encode []uuid.UUID
	var gQtys []int32
	var gTTLs, gShops, gItems, gLocs []int64
	for i, r := range uniq {
		if q := int(qtys[i]); q <= units[r.key] {
			units[r.key] -= q
			gIDs, gQtys, gTTLs = append(gIDs, ids[i].String()), append(gQtys, qtys[i]), append(gTTLs, ttls[i])
			gShops, gItems, gLocs = append(gShops, shops[i]), append(gItems, items[i]), append(gLocs, locs[i])
		}
	}
	created := make(map[checkoutKey]*holdfast.Hold, len(gIDs))
	if len(gIDs) == 0 {
		_, err := conn.Exec(ctx, "ROLLBACK")
		return created, err
	}

	b = &pgx.Batch{}
	b.Queue(c.q(ctx, holdfast.RouteReserve, "batch_reserve"),
		gIDs, gQtys, gTTLs, gShops, gItems, gLocs, c.cfg.HoldLifetimeMax.Microseconds(), c.now())
	b.Queue("COMMIT")
	// From here the COMMIT is on its way with the holds: any failure to
	// read their answers may follow a commit (a connection lost with the
	// answers in flight), so it is a commitError, and commitUnacknowledged
	// tells a lost answer (doubt) from a statement error (which aborts the
	// pipeline before its COMMIT: nothing committed).
	br = conn.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, &driver.CommitError{Err: err}
	}
	for rows.Next() {
		h := &holdfast.Hold{Status: holdfast.StatusHeld, Claimable: true, Revision: 1}
		if err := rows.Scan(&h.ShopID, &h.CheckoutID, &h.CreatedAt, &h.ExpiresAt, &h.Deadline); err != nil {
			rows.Close()
			return nil, &driver.CommitError{Err: err}
		}
		created[checkoutKey{h.ShopID, h.CheckoutID}] = h
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, &driver.CommitError{Err: err}
	}
	tag, err := br.Exec()
	err = commitChecked(conn.Conn().PgConn(), err) // follow.go: a cancelled synchronous-replication wait
	if err != nil {
		return nil, &driver.CommitError{Err: err}
	}
	if tag.String() == "ROLLBACK" {
		return nil, pgx.ErrTxCommitRollback
	}
	return created, br.Close()
}

// batchKey reports whether k is a batch key as this client last saw its
// strategy, or by the client's default for a key it has not seen. A stale
// or missing cache entry is safe: a key that is not (or no longer) a batch
// key has no units in its counter row, the batch sends it to the plain
// path, and that path caches its strategy.
func (c *Client) batchKey(k holdfast.Key) bool {
	if ki, ok := c.keys.Load(k); ok {
		return strategyOf(ki.(keyInfo).strategy).combines
	}
	return strategyOf(c.cfg.Strategy).combines
}
