package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/jackc/pgx/v5"
)

// The waitlist on PostgreSQL (issue #17 item 2).
//
// A reservation with ReserveParams.Wait that comes back short, while every
// short key has outstanding holds (or waiters already), enqueues the
// checkout: under the advisory locks of its cart's keys (key order) it
// inserts its waiters row (seq: its place) and a waiter_lines row per
// short line — the key's "has waiters" mark — and empties those keys'
// buffers. While a key has the mark, refill.sql adds nothing to its buffer
// and sellable.sql answers 0 for it: every take path (fast, combined,
// slow, slowest) finds an empty buffer and a new buyer is refused as
// short, so units that come back (release, sweep, restock) stay
// unallocated for the waitlist server. Requests on keys without waiters
// keep their path: the mark is read only where a reservation already
// found its buffer short (sellable.sql) and by refills.
//
// The server (ServeWaitlist; the "waitlist" maintenance worker, woken by
// releases, sweeps and stock changes of this client) takes one global
// transaction-scoped lock, expires waits that ran out (waitlist.expired),
// then walks the queue in seq order under the keys' locks and grants each
// cart whole as an ordinary hold with its TTL (waitlist.held), or not at
// all. Head of line: a cart that cannot be served yet blocks every cart
// behind it that shares one of its keys, so a big cart is never starved by
// small ones behind it; it waits at most its Wait (bounded by
// Config.WaitMax). A cart asking more of a key than its available stock is
// never enqueued.

// waiterRow is a waiters row as the server reads it.
type waiterRow struct {
	shop     int64
	checkout uuid.UUID
	seq      int64
	lines    []holdfast.Line
	ttl      time.Duration
}

// waitIfShort is Reserve's waitlist step: when p asks to wait and err is a
// short answer, enqueue the checkout (or answer its existing wait).
func (c *Client) waitIfShort(ctx context.Context, p holdfast.ReserveParams, h *holdfast.Hold, err error) (*holdfast.Hold, error) {
	var ise *holdfast.InsufficientStockError
	if p.Wait <= 0 || !errors.As(err, &ise) {
		return h, err
	}
	req, verr := c.validateReserve(p)
	if verr != nil {
		return nil, verr
	}
	start := time.Now()
	var out *holdfast.Hold
	var answer error
	runErr := c.run(ctx, c.pool, holdfast.RouteReserve, true, true, func(tx pgx.Tx, _ int) error {
		out, answer = nil, nil
		// Granted meanwhile, or another attempt of the checkout holds.
		prev, err := c.existing(ctx, tx, req)
		if !errors.Is(err, holdfast.ErrNotFound) {
			out = prev
			return err
		}
		if werr := c.waiterAnswer(ctx, tx, holdfast.RouteReserve, req.shop, req.checkout, req.lines); !errors.Is(werr, holdfast.ErrNotFound) {
			answer = werr
			return errRollback
		}
		for _, l := range req.lines {
			if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReserve, "lock_key"), keyHash(holdfast.Key{ShopID: req.shop, ItemID: l.ItemID, LocationID: l.LocationID})); err != nil {
				return err
			}
		}
		items, locs, _ := columns(req.lines)
		rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReserve, "waitlist_keys"), req.shop, items, locs)
		if err != nil {
			return err
		}
		type keyWait struct {
			available, held int
			waited          bool
		}
		kw, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (keyWait, error) {
			var k keyWait
			err := r.Scan(&k.available, &k.held, &k.waited)
			return k, err
		})
		if err != nil {
			return err
		}
		var short []holdfast.Line
		for _, s := range ise.Lines {
			i := slices.IndexFunc(req.lines, func(l holdfast.Line) bool { return l.ItemID == s.ItemID && l.LocationID == s.LocationID })
			// Units can come back only where holds are outstanding (or
			// waiters ahead will release theirs), and a cart asking more
			// than the stock would block the queue for nothing.
			if i < 0 || (kw[i].held == 0 && !kw[i].waited) || req.lines[i].Quantity > kw[i].available {
				answer = ise
				return errRollback
			}
			short = append(short, req.lines[i])
		}
		shortRaw, err := json.Marshal(ise.Lines)
		if err != nil {
			return err
		}
		var seq int64
		err = tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReserve, "waitlist_enqueue"), req.shop, req.checkout, string(req.linesRaw), string(shortRaw),
			req.ttl.Microseconds(), p.Wait.Microseconds(), c.now()).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return errRetry // enqueued meanwhile: answer it
		}
		if err != nil {
			return err
		}
		si, sl, sq := columns(short)
		if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReserve, "waitlist_lines_create"), req.shop, req.checkout, seq, si, sl, sq); err != nil {
			return err
		}
		for _, l := range short {
			// The key's buffer goes back to unallocated: from now on its
			// units go to its waiters first.
			if err := c.shrink(ctx, tx, holdfast.RouteReserve, holdfast.Key{ShopID: req.shop, ItemID: l.ItemID, LocationID: l.LocationID}, true, 0); err != nil {
				return err
			}
		}
		werr := c.waiterAnswer(ctx, tx, holdfast.RouteReserve, req.shop, req.checkout, req.lines)
		if !errors.Is(werr, holdfast.ErrWaitlisted) {
			return werr // a failed read: roll the wait back
		}
		answer = werr
		return nil
	})
	if runErr == nil && out == nil && answer != nil && errors.Is(answer, holdfast.ErrWaitlisted) {
		c.kickWaitlist()
	}
	err = cmp.Or(runErr, answer)
	c.cfg.Observer.Op(holdfast.RouteReserve, outcome(err, out), time.Since(start))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// waiterAnswer reads the checkout's wait: *WaitlistedError while it waits,
// ErrWaitExpired once it ran out, ErrIdempotencyConflict when lines (if
// not nil) differ from the waiting cart's, ErrNotFound without a wait (or
// when it was granted: the hold answers then).
func (c *Client) waiterAnswer(ctx context.Context, q pgx.Tx, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	var status string
	var rawLines, rawShort []byte
	var until time.Time
	var lapsed bool
	var pos int
	err := q.QueryRow(ctx, c.q(ctx, route, "waitlist_get"), shop, checkout, c.now()).Scan(&status, &rawLines, &rawShort, &until, &lapsed, &pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return holdfast.ErrNotFound
	}
	if err != nil {
		return err
	}
	if lines != nil {
		var wl []holdfast.Line
		if err := json.Unmarshal(rawLines, &wl); err != nil {
			return err
		}
		if !slices.Equal(wl, lines) {
			return holdfast.ErrIdempotencyConflict
		}
	}
	switch {
	case status == "expired" || (status == "waiting" && lapsed):
		return holdfast.ErrWaitExpired
	case status == "waiting":
		we := &holdfast.WaitlistedError{Position: pos, WaitUntil: until}
		if err := json.Unmarshal(rawShort, &we.Lines); err != nil {
			return err
		}
		return we
	}
	return holdfast.ErrNotFound
}

// holdOrWait is Hold's answer for a checkout without a hold: its wait.
func (c *Client) holdOrWait(ctx context.Context, shop int64, checkout uuid.UUID, h *holdfast.Hold, err error) (*holdfast.Hold, error) {
	if !errors.Is(err, holdfast.ErrNotFound) {
		return h, err
	}
	werr := c.run(ctx, c.pool, holdfast.RouteRead, true, true, func(tx pgx.Tx, _ int) error {
		return c.waiterAnswer(ctx, tx, holdfast.RouteRead, shop, checkout, nil)
	})
	return nil, werr
}

// kickWaitlist wakes the waitlist server, if this client runs one: units
// may have come back.
func (c *Client) kickWaitlist() {
	if w := c.waitlister.Load(); w != nil {
		w.Kick()
	}
}

func (c *Client) waitlistStep(ctx context.Context) (bool, error) {
	n, err := c.ServeWaitlist(ctx)
	return n >= holdfast.WaitlistScanMax, err
}

// ServeWaitlist runs one pass of the waitlist server in one transaction:
// it ends waits that ran out (at most WaitlistScanMax; event
// waitlist.expired), then grants waiting carts first-come-first-served
// (the oldest WaitlistScanMax) as ordinary holds with their TTL, each
// whole or not at all (event waitlist.held). It returns how many waits it
// ended. When nobody waits it costs one statement. Replicas may run it at
// once: one pass runs at a time. Ended waits are purged with hold outcomes
// (PurgeOnce) after Config.OutcomeRetention.
func (c *Client) ServeWaitlist(ctx context.Context) (int, error) {
	var waiting bool
	if err := c.maintenance().QueryRow(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_any")).Scan(&waiting); err != nil {
		return 0, c.mapErr(holdfast.RouteReplenish, err, true, true)
	}
	if !waiting {
		return 0, nil
	}
	var n int
	var granted []*holdfast.Hold
	err := c.run(ctx, c.maintenance(), holdfast.RouteReplenish, true, true, func(tx pgx.Tx, _ int) error {
		n, granted = 0, nil
		if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_serve_lock")); err != nil {
			return err
		}
		expired, err := c.expireWaits(ctx, tx)
		if err != nil {
			return err
		}
		n += expired
		queue, err := c.waitQueue(ctx, tx)
		if err != nil || len(queue) == 0 {
			return err
		}
		// The keys' locks first, in key order; then the queue again: an
		// enqueue on one of these keys that committed meanwhile is in it,
		// and none with an earlier seq can still be in flight (it would
		// hold the key's lock).
		var keys []holdfast.Key
		for _, w := range queue {
			for _, l := range w.lines {
				keys = append(keys, holdfast.Key{ShopID: w.shop, ItemID: l.ItemID, LocationID: l.LocationID})
			}
		}
		slices.SortFunc(keys, compareKeys)
		keys = slices.Compact(keys)
		locked := make(map[holdfast.Key]bool, len(keys))
		for _, k := range keys {
			if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "lock_key"), keyHash(k)); err != nil {
				return err
			}
			locked[k] = true
		}
		if queue, err = c.waitQueue(ctx, tx); err != nil {
			return err
		}
		blocked := make(map[holdfast.Key]bool)
		for _, w := range queue {
			ok := true
			for _, l := range w.lines {
				k := holdfast.Key{ShopID: w.shop, ItemID: l.ItemID, LocationID: l.LocationID}
				ok = ok && locked[k] && !blocked[k]
			}
			if ok {
				h, done, err := c.grantWait(ctx, tx, w)
				if err != nil {
					return err
				}
				if h != nil {
					granted = append(granted, h)
				}
				if done {
					n++
					continue
				}
			}
			for _, l := range w.lines {
				blocked[holdfast.Key{ShopID: w.shop, ItemID: l.ItemID, LocationID: l.LocationID}] = true
			}
		}
		// Keys whose queue emptied get their buffers back; the others
		// get nothing (refill.sql).
		_, err = c.refill(ctx, tx, holdfast.RouteReplenish, keys)
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, h := range granted {
		c.noteHold(h)
	}
	return n, nil
}

func compareKeys(a, b holdfast.Key) int {
	switch {
	case a.ShopID != b.ShopID:
		return cmpInt(a.ShopID, b.ShopID)
	case a.ItemID != b.ItemID:
		return cmpInt(a.ItemID, b.ItemID)
	}
	return cmpInt(a.LocationID, b.LocationID)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// expireWaits ends the waits that ran out and queues their keys for the
// replenisher (a key whose last waiter left gets its buffer back).
func (c *Client) expireWaits(ctx context.Context, tx pgx.Tx) (int, error) {
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_expire"), c.now(), holdfast.WaitlistScanMax)
	if err != nil {
		return 0, err
	}
	type ended struct {
		shop     int64
		checkout uuid.UUID
		lines    []holdfast.Line
	}
	var done []ended
	for rows.Next() {
		var e ended
		var raw []byte
		var deleted int64
		if err := rows.Scan(&e.shop, &e.checkout, &raw, &deleted); err != nil {
			rows.Close()
			return 0, err
		}
		if err := json.Unmarshal(raw, &e.lines); err != nil {
			rows.Close()
			return 0, err
		}
		done = append(done, e)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var keys []holdfast.Key
	for _, e := range done {
		if err := InsertEventTx(ctx, tx, e.shop, holdfast.EventWaitlistExpired, &e.checkout, e.lines, nil); err != nil {
			return 0, err
		}
		for _, l := range e.lines {
			keys = append(keys, holdfast.Key{ShopID: e.shop, ItemID: l.ItemID, LocationID: l.LocationID})
		}
	}
	if len(keys) > 0 {
		slices.SortFunc(keys, compareKeys)
		if err := c.queueKeys(ctx, tx, holdfast.RouteReplenish, slices.Compact(keys)); err != nil {
			return 0, err
		}
	}
	return len(done), nil
}

func (c *Client) waitQueue(ctx context.Context, tx pgx.Tx) ([]waiterRow, error) {
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_queue"), c.now(), holdfast.WaitlistScanMax)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (waiterRow, error) {
		var w waiterRow
		var raw []byte
		var ttl int64
		if err := r.Scan(&w.shop, &w.checkout, &w.seq, &raw, &ttl); err != nil {
			return w, err
		}
		w.ttl = time.Duration(ttl) * time.Microsecond
		return w, json.Unmarshal(raw, &w.lines)
	})
}

// grantWait holds w's cart whole, from units no buffer and no hold has,
// under its keys' locks (which tx holds), and ends the wait; nil when the
// cart cannot be served yet (done false). A checkout that got a hold of its
// own meanwhile ends its wait as expired (done, no hold).
func (c *Client) grantWait(ctx context.Context, tx pgx.Tx, w waiterRow) (h *holdfast.Hold, done bool, err error) {
	for _, l := range w.lines {
		st, err := c.keyState(ctx, tx, holdfast.RouteReplenish, holdfast.Key{ShopID: w.shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if err != nil {
			return nil, false, err
		}
		if st.available-st.safety-st.held < l.Quantity { // never the safety stock
			return nil, false, nil
		}
	}
	// Make room: units still in a buffer (keys of the cart without
	// waiters) go back to unallocated, as much as the line needs.
	for _, l := range w.lines {
		k := holdfast.Key{ShopID: w.shop, ItemID: l.ItemID, LocationID: l.LocationID}
		if err := c.shrink(ctx, tx, holdfast.RouteReplenish, k, false, -l.Quantity); err != nil {
			return nil, false, err
		}
		st, err := c.keyState(ctx, tx, holdfast.RouteReplenish, k)
		if err != nil {
			return nil, false, err
		}
		if st.available-st.safety-st.held-st.pooled < l.Quantity {
			return nil, false, nil // taken by a reservation meanwhile
		}
	}
	raw, err := json.Marshal(w.lines)
	if err != nil {
		return nil, false, err
	}
	h = &holdfast.Hold{CheckoutID: w.checkout, ShopID: w.shop, Status: holdfast.StatusHeld, Claimable: true, Lines: w.lines}
	err = tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReplenish, "hold_insert"),
		w.checkout, w.shop, string(raw), w.ttl.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now(),
	).Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline)
	status := "held"
	if errors.Is(err, pgx.ErrNoRows) {
		status, h = "expired", nil
	} else if err != nil {
		return nil, false, err
	} else {
		items, locs, qtys := columns(w.lines)
		if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "hold_lines_create"), w.checkout, w.shop, items, locs, qtys, h.ExpiresAt, h.CreatedAt); err != nil {
			return nil, false, err
		}
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_end"), w.shop, w.checkout, status, c.now()); err != nil {
		return nil, false, err
	}
	ev, exp := holdfast.EventWaitlistHeld, (*time.Time)(nil)
	if h != nil {
		exp = &h.ExpiresAt
	} else {
		ev = holdfast.EventWaitlistExpired
	}
	if err := InsertEventTx(ctx, tx, w.shop, ev, &w.checkout, w.lines, exp); err != nil {
		return nil, false, err
	}
	return h, true, nil
}
