package mysql

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/holdfast/holdfast"
)

// CombineBatchMax bounds the reservations one combined transaction serves.
const CombineBatchMax = 256

// CombineRunnersMax bounds the combined transactions in flight at once from
// one client: while one commits, the next gathers and executes. They lock
// counter rows in key order, so they never deadlock each other.
const CombineRunnersMax = 2

// combineTimeout bounds one combined transaction, retries included.
const combineTimeout = 30 * time.Second

// combiner turns the contended one-line reservations on batch keys from
// this process into one transaction per batch: the counter row is locked
// and committed once for up to CombineBatchMax reservations. Every request
// is still granted or refused on its own (all-or-nothing, idempotent on its
// checkout), and each caller gets its own answer. An uncontended request
// takes the plain counter path, so keys are combined while contention shows
// and stop being combined as soon as it cools.
type combiner struct {
	mu      sync.Mutex
	running int
	pending []*batchReq
}

type batchReq struct {
	key   holdfast.Key
	req   *reservation
	done  chan batchResult // buffered: the batch never blocks on a caller
	state atomic.Int32     // reqQueued, then reqTaken (by a batch) or reqAbandoned (by its caller)
}

// A batchReq's states: a caller that leaves while its request is queued
// abandons it (nothing happened); once a batch has taken it, the batch may
// commit its hold.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

type batchResult struct {
	h   *holdfast.Hold
	err error
	// plain asks the caller to resolve the request on the plain path:
	// short of units, a checkout that already has a hold or outcome, or a
	// duplicate within the batch.
	plain bool
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

// reserveCombined serves req through the combiner when another combinable
// reservation is in flight in this process (the caller counts itself in
// inflight, the engine's count, while it is). ok false: take the plain path.
func (c *Client) reserveCombined(ctx context.Context, k holdfast.Key, req *reservation, inflight int64) (h *holdfast.Hold, err error, ok bool) {
	cb := &c.combiner
	cb.mu.Lock()
	if inflight <= 1 && cb.running == 0 {
		cb.mu.Unlock()
		return nil, nil, false
	}
	r := &batchReq{key: k, req: req, done: make(chan batchResult, 1)}
	cb.pending = append(cb.pending, r)
	if cb.running < CombineRunnersMax {
		cb.running++
		go c.runBatches()
	}
	cb.mu.Unlock()
	select {
	case res := <-r.done:
		if res.plain {
			return nil, nil, false
		}
		return res.h, res.err, true
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			// No batch took it, and none will: nothing happened.
			return nil, c.mapErr(holdfast.RouteReserve, ctx.Err(), true, true), true
		}
		select {
		case res := <-r.done:
			if !res.plain {
				return res.h, res.err, true
			}
			// Sent to the plain path, which the caller has left: the
			// batch may have found its hold in place (committed by an
			// earlier attempt whose COMMIT answer was lost), so this is
			// not "nothing happened" either.
		default:
		}
		// Its batch is running and may commit the hold: a retry with the
		// same checkout id finds it (or finds nothing, and reserves).
		return nil, fmt.Errorf("%w: %s: the caller left while its combined batch ran: %v", holdfast.ErrOutcomeUnknown, holdfast.RouteReserve, ctx.Err()), true
	}
}

func (c *Client) runBatches() {
	cb := &c.combiner
	for {
		cb.mu.Lock()
		if len(cb.pending) == 0 {
			cb.running--
			cb.mu.Unlock()
			return
		}
		// Requests whose callers left are dropped here, before their
		// batch starts.
		batch := make([]*batchReq, 0, min(len(cb.pending), CombineBatchMax))
		n := 0
		for _, r := range cb.pending {
			if len(batch) == CombineBatchMax {
				break
			}
			n++
			if r.state.CompareAndSwap(reqQueued, reqTaken) {
				batch = append(batch, r)
			}
		}
		cb.pending = cb.pending[n:]
		cb.mu.Unlock()
		if len(batch) > 0 {
			c.execBatch(batch)
		}
	}
}

type checkoutKey struct {
	shop int64
	id   string // hex, upper case as HEX() returns it
}

// execBatch runs one transaction for batch — lock the keys' counter rows in
// key order, grant in arrival order, create the holds and their lines, take
// the units — and answers each request.
func (c *Client) execBatch(batch []*batchReq) {
	ctx, cancel := context.WithTimeout(context.Background(), combineTimeout)
	defer cancel()
	seen := make(map[checkoutKey]bool, len(batch))
	uniq := make([]*batchReq, 0, len(batch))
	for _, r := range batch {
		ck := checkoutKey{r.req.Shop, strings.ToUpper(hex.EncodeToString(r.req.Checkout[:]))}
		if seen[ck] {
			r.done <- batchResult{plain: true}
			continue
		}
		seen[ck] = true
		uniq = append(uniq, r)
	}
	var created map[checkoutKey]*holdfast.Hold
	err := c.run(ctx, nil, holdfast.RouteReserve, true, func(tx *sql.Tx, _ int) error {
		var err error
		created, err = c.batchOnce(ctx, tx, uniq)
		return err
	})
	for _, r := range uniq {
		ck := checkoutKey{r.req.Shop, strings.ToUpper(hex.EncodeToString(r.req.Checkout[:]))}
		switch h, ok := created[ck]; {
		case err != nil:
			r.done <- batchResult{err: err}
		case ok:
			r.done <- batchResult{h: h}
		default:
			r.done <- batchResult{plain: true}
		}
	}
}

// errBatchDuplicate: a checkout of the batch got a hold from elsewhere
// between the check and the insert; the whole batch goes the plain way.
var errBatchDuplicate = errors.New("holdfast/mysql: batch checkout created concurrently")

func (c *Client) batchOnce(ctx context.Context, tx *sql.Tx, reqs []*batchReq) (out map[checkoutKey]*holdfast.Hold, err error) {
	const route = holdfast.RouteReserve
	keys := make([]holdfast.Key, 0, 4)
	for _, r := range reqs {
		if !slices.Contains(keys, r.key) {
			keys = append(keys, r.key)
		}
	}
	slices.SortFunc(keys, func(a, b holdfast.Key) int {
		switch {
		case a.ShopID != b.ShopID:
			return int(min(max(a.ShopID-b.ShopID, -1), 1))
		case a.ItemID != b.ItemID:
			return int(min(max(a.ItemID-b.ItemID, -1), 1))
		}
		return int(min(max(a.LocationID-b.LocationID, -1), 1))
	})
	// The batch's in-flight marks before anything else (inflight.go).
	if err := c.markInFlightBatch(ctx, tx, reqs); err != nil {
		return nil, err
	}
	units := make(map[holdfast.Key]int, len(keys))
	for _, k := range keys {
		var n int
		err := tx.QueryRowContext(ctx, c.q(ctx, route, "batch_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&n)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		units[k] = n
	}
	all := make([][2]any, len(reqs))
	for i, r := range reqs {
		all[i] = [2]any{r.req.Shop, hex.EncodeToString(r.req.Checkout[:])}
	}
	raw, _ := json.Marshal(all)
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "batch_existing"), string(raw), string(raw))
	if err != nil {
		return nil, err
	}
	exists := map[checkoutKey]bool{}
	for rows.Next() {
		var ck checkoutKey
		if err := rows.Scan(&ck.id, &ck.shop); err != nil {
			rows.Close()
			return nil, err
		}
		exists[ck] = true
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	var granted [][4]any
	var grantedIDs [][2]any
	taken := map[holdfast.Key]int{}
	for _, r := range reqs {
		ck := checkoutKey{r.req.Shop, strings.ToUpper(hex.EncodeToString(r.req.Checkout[:]))}
		q := r.req.Lines[0].Quantity
		if exists[ck] || units[r.key] < q {
			continue
		}
		units[r.key] -= q
		taken[r.key] += q
		granted = append(granted, [4]any{r.req.Shop, ck.id, string(r.req.LinesRaw), r.req.TTL.Microseconds()})
		grantedIDs = append(grantedIDs, [2]any{r.req.Shop, ck.id})
	}
	if len(granted) == 0 {
		return nil, nil
	}
	defer func() {
		if err == nil {
			c.combinedGrants.Add(int64(len(out)))
		}
	}()
	rawGranted, _ := json.Marshal(granted)
	rawIDs, _ := json.Marshal(grantedIDs)
	_, err = tx.ExecContext(ctx, c.q(ctx, route, "batch_holds"), c.cfg.HoldLifetimeMax.Microseconds(), string(rawGranted), c.now())
	if isDup(err) {
		return nil, errBatchDuplicate
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "batch_lines"), string(rawIDs)); err != nil {
		return nil, err
	}
	for _, k := range keys {
		q := taken[k]
		if q == 0 {
			continue
		}
		res, err := tx.ExecContext(ctx, c.q(ctx, route, "take_counter"), q, k.ShopID, k.ItemID, k.LocationID, q)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return nil, errors.Join(err, errors.New("holdfast/mysql: combined take found the locked counter short"))
		}
	}
	rows, err = tx.QueryContext(ctx, c.q(ctx, route, "batch_times"), string(rawIDs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := make(map[checkoutKey]*batchReq, len(reqs))
	for _, r := range reqs {
		byID[checkoutKey{r.req.Shop, strings.ToUpper(hex.EncodeToString(r.req.Checkout[:]))}] = r
	}
	out = make(map[checkoutKey]*holdfast.Hold, len(granted))
	for rows.Next() {
		var ck checkoutKey
		h := &holdfast.Hold{Status: holdfast.StatusHeld, Claimable: true, Revision: 1}
		if err := rows.Scan(&ck.id, &ck.shop, &h.CreatedAt, &h.ExpiresAt, &h.Deadline); err != nil {
			return nil, err
		}
		r := byID[ck]
		if r == nil {
			continue
		}
		h.CheckoutID, h.ShopID, h.Lines = r.req.Checkout, r.req.Shop, r.req.Lines
		out[ck] = h
	}
	return out, rows.Err()
}
