package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// The waitlist on MySQL/MariaDB (issue #17 item 2), as on PostgreSQL (see
// postgres/waitlist.go): a short reservation with
// ReserveParams.Wait, while every short key has outstanding holds (or
// waiters already), enqueues the checkout under its cart's key lock rows
// (key order): a waiters row (seq: its place) and a waiter_lines row per
// short key, the key's "has waiters" mark, and the key's buffer emptied.
// While a key has the mark, refillKey adds nothing to it (key_state.sql
// reads the mark) and sellable.sql answers 0, so every take path finds an
// empty buffer and new buyers are refused as short: units that come back
// stay unallocated for the waitlist server.
//
// The server (ServeWaitlist, the "waitlist" maintenance worker) locks the
// waitlist_lock row, ends waits that ran out, then walks the queue in seq
// order under the keys' lock rows (key order) and grants each cart whole,
// as an ordinary hold with its TTL, or not at all. Head of line: a cart
// that cannot be served yet blocks every cart behind it sharing one of its
// keys.

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
	const route = holdfast.RouteReserve
	start := time.Now()
	var out *holdfast.Hold
	var answer error
	runErr := c.run(ctx, nil, route, true, func(tx *sql.Tx, _ int) error {
		out, answer = nil, nil
		prev, err := c.existing(ctx, tx, req)
		if !errors.Is(err, holdfast.ErrNotFound) {
			out = prev
			return err
		}
		if werr := c.waiterAnswer(ctx, tx, route, req.shop, req.checkout, req.lines); !errors.Is(werr, holdfast.ErrNotFound) {
			answer = werr
			return errRollback
		}
		for _, l := range req.lines {
			if _, err := c.lockKey(ctx, tx, route, holdfast.Key{ShopID: req.shop, ItemID: l.ItemID, LocationID: l.LocationID}); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, c.q(ctx, route, "sellable"), req.shop, string(req.linesRaw))
		if err != nil {
			return err
		}
		type keyWait struct {
			available, held int
			waited          bool
		}
		var kw []keyWait
		for rows.Next() {
			var k keyWait
			if err := rows.Scan(&k.available, &k.held, &k.waited); err != nil {
				rows.Close()
				return err
			}
			kw = append(kw, k)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(kw) != len(req.lines) {
			return errors.New("holdfast/mysql: sellable returned a row count unlike the cart's")
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
		res, err := tx.ExecContext(ctx, c.q(ctx, route, "waitlist_enqueue"), req.shop, req.checkout[:], string(req.linesRaw), string(shortRaw),
			req.ttl.Microseconds(), p.Wait.Microseconds(), c.now())
		if isDup(err) {
			return errRetry // enqueued meanwhile: answer it
		}
		if err != nil {
			return err
		}
		seq, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for _, l := range short {
			if _, err := tx.ExecContext(ctx, c.q(ctx, route, "waitlist_line_create"), req.shop, l.ItemID, l.LocationID, seq, req.checkout[:], l.Quantity); err != nil {
				return err
			}
		}
		for _, l := range short {
			// The key's buffer goes back to unallocated: from now on its
			// units go to its waiters first.
			if err := c.shrink(ctx, tx, route, holdfast.Key{ShopID: req.shop, ItemID: l.ItemID, LocationID: l.LocationID}, true); err != nil {
				return err
			}
		}
		werr := c.waiterAnswer(ctx, tx, route, req.shop, req.checkout, req.lines)
		if !errors.Is(werr, holdfast.ErrWaitlisted) {
			return werr // a failed read: roll the wait back
		}
		answer = werr
		return nil
	})
	if runErr == nil && out == nil && errors.Is(answer, holdfast.ErrWaitlisted) {
		c.kickWaitlist()
	}
	err = cmp.Or(runErr, answer)
	c.cfg.Observer.Op(route, outcome(err, out), time.Since(start))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// waiterAnswer reads the checkout's wait: *WaitlistedError while it waits,
// ErrWaitExpired once it ran out, ErrIdempotencyConflict when lines (if
// not nil) differ from the waiting cart's, ErrNotFound without a wait (or
// when it was granted: the hold answers then).
func (c *Client) waiterAnswer(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	var status string
	var rawLines, rawShort []byte
	var until time.Time
	var seq int64
	var lapsed bool
	err := tx.QueryRowContext(ctx, c.q(ctx, route, "waitlist_get"), c.now(), shop, checkout[:]).Scan(&status, &rawLines, &rawShort, &until, &seq, &lapsed)
	if errors.Is(err, sql.ErrNoRows) {
		return holdfast.ErrNotFound
	}
	if err != nil {
		return err
	}
	var wl []holdfast.Line
	if err := json.Unmarshal(rawLines, &wl); err != nil {
		return err
	}
	if lines != nil && !slices.Equal(wl, lines) {
		return holdfast.ErrIdempotencyConflict
	}
	switch {
	case status == "expired" || (status == "waiting" && lapsed):
		return holdfast.ErrWaitExpired
	case status != "waiting":
		return holdfast.ErrNotFound
	}
	we := &holdfast.WaitlistedError{Position: 1, WaitUntil: until}
	if err := json.Unmarshal(rawShort, &we.Lines); err != nil {
		return err
	}
	// The position: 1 + the carts of the shop ahead that share a key.
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "waitlist_ahead"), shop, seq)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return err
		}
		var ahead []holdfast.Line
		if err := json.Unmarshal(raw, &ahead); err != nil {
			return err
		}
		if slices.ContainsFunc(ahead, func(a holdfast.Line) bool {
			return slices.ContainsFunc(wl, func(b holdfast.Line) bool { return a.ItemID == b.ItemID && a.LocationID == b.LocationID })
		}) {
			we.Position++
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return we
}

// holdOrWait is Hold's answer for a checkout without a hold: its wait.
func (c *Client) holdOrWait(ctx context.Context, shop int64, checkout uuid.UUID, h *holdfast.Hold, err error) (*holdfast.Hold, error) {
	if !errors.Is(err, holdfast.ErrNotFound) {
		return h, err
	}
	return nil, c.run(ctx, nil, holdfast.RouteRead, true, func(tx *sql.Tx, _ int) error {
		return c.waiterAnswer(ctx, tx, holdfast.RouteRead, shop, checkout, nil)
	})
}

// kickWaitlist wakes the waitlist server, if this client runs one.
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
// waitlist.expired), grants waiting carts first-come-first-served (the
// oldest WaitlistScanMax) as ordinary holds with their TTL, each whole or
// not at all (event waitlist.held). It returns how many waits it ended.
// When nobody waits it costs one statement. One pass runs at a time across
// clients. Ended waits are purged with hold outcomes (PurgeOnce) after
// Config.OutcomeRetention.
func (c *Client) ServeWaitlist(ctx context.Context) (int, error) {
	const route = holdfast.RouteReplenish
	var waiting bool
	if err := c.db.QueryRowContext(ctx, c.q(ctx, route, "waitlist_any")).Scan(&waiting); err != nil {
		return 0, c.mapErr(route, err, true, true)
	}
	if !waiting {
		return 0, nil
	}
	var n int
	err := c.run(ctx, nil, route, true, func(tx *sql.Tx, _ int) error {
		n = 0
		if _, err := c.exists(ctx, tx, route, "waitlist_serve_lock"); err != nil {
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
		// The keys' lock rows first, in key order; then the queue again:
		// an enqueue on one of these keys that committed meanwhile is in
		// it, and none with an earlier seq can still be in flight.
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
			ok, err := c.lockKey(ctx, tx, route, k)
			if err != nil {
				return err
			}
			locked[k] = ok
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
				done, err := c.grantWait(ctx, tx, w)
				if err != nil {
					return err
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
		// get nothing (key_state.sql reads the mark).
		for _, k := range keys {
			if locked[k] {
				if _, err := c.refillKey(ctx, tx, true, route, k, false, 0); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func compareKeys(a, b holdfast.Key) int {
	return cmp.Or(cmp.Compare(a.ShopID, b.ShopID), cmp.Compare(a.ItemID, b.ItemID), cmp.Compare(a.LocationID, b.LocationID))
}

// expireWaits ends the waits that ran out. Their keys' buffers come back
// with the next refill (a release, a short reservation, the replenisher).
func (c *Client) expireWaits(ctx context.Context, tx *sql.Tx) (int, error) {
	const route = holdfast.RouteReplenish
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "waitlist_due"), c.now(), holdfast.WaitlistScanMax)
	if err != nil {
		return 0, err
	}
	type due struct {
		shop     int64
		checkout uuid.UUID
		lines    []holdfast.Line
	}
	var ds []due
	for rows.Next() {
		var d due
		var id, raw []byte
		if err := rows.Scan(&d.shop, &id, &raw); err != nil {
			rows.Close()
			return 0, err
		}
		copy(d.checkout[:], id)
		if err := json.Unmarshal(raw, &d.lines); err != nil {
			rows.Close()
			return 0, err
		}
		ds = append(ds, d)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	n := 0
	for _, d := range ds {
		ended, err := c.endWait(ctx, tx, d.shop, d.checkout, "expired")
		if err != nil {
			return 0, err
		}
		if ended {
			n++
			if err := c.InsertEventTx(ctx, tx, d.shop, holdfast.EventWaitlistExpired, &d.checkout, d.lines, nil); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// endWait ends one wait and unmarks its keys; false when it was not waiting.
func (c *Client) endWait(ctx context.Context, tx *sql.Tx, shop int64, checkout uuid.UUID, status string) (bool, error) {
	const route = holdfast.RouteReplenish
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "waitlist_end"), status, c.now(), shop, checkout[:])
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	_, err = tx.ExecContext(ctx, c.q(ctx, route, "waitlist_unmark"), shop, checkout[:])
	return err == nil, err
}

func (c *Client) waitQueue(ctx context.Context, tx *sql.Tx) ([]waiterRow, error) {
	const route = holdfast.RouteReplenish
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "waitlist_queue"), c.now(), holdfast.WaitlistScanMax)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []waiterRow
	for rows.Next() {
		var w waiterRow
		var id, raw []byte
		var ttl int64
		if err := rows.Scan(&w.shop, &id, &w.seq, &raw, &ttl); err != nil {
			return nil, err
		}
		copy(w.checkout[:], id)
		w.ttl = time.Duration(ttl) * time.Microsecond
		if err := json.Unmarshal(raw, &w.lines); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// grantWait holds w's cart whole, from units no buffer and no hold has,
// under its keys' lock rows (which tx holds), and ends the wait; false
// when the cart cannot be served yet. A checkout that got a hold of its
// own meanwhile ends its wait as expired.
func (c *Client) grantWait(ctx context.Context, tx *sql.Tx, w waiterRow) (bool, error) {
	const route = holdfast.RouteReplenish
	for _, l := range w.lines {
		st, err := c.keyState(ctx, tx, route, holdfast.Key{ShopID: w.shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if err != nil {
			return false, err
		}
		if st.available-st.safety-st.held < l.Quantity { // never the safety stock
			return false, nil
		}
	}
	// Make room: units still in a buffer (keys of the cart without
	// waiters) go back to unallocated, as many as the line needs.
	for _, l := range w.lines {
		k := holdfast.Key{ShopID: w.shop, ItemID: l.ItemID, LocationID: l.LocationID}
		st, err := c.keyState(ctx, tx, route, k)
		if err != nil {
			return false, err
		}
		if excess := min(st.pooled, st.pooled+st.held+l.Quantity-(st.available-st.safety)); excess > 0 {
			if st.poolRows > 0 {
				res, err := tx.ExecContext(ctx, c.q(ctx, route, "pool_shrink"), k.ShopID, k.ItemID, k.LocationID, min(excess, st.poolRows))
				if err != nil {
					return false, err
				}
				got, _ := res.RowsAffected()
				excess -= int(got)
			}
			if excess > 0 && st.counterUnits > 0 {
				if _, err := tx.ExecContext(ctx, c.q(ctx, route, "counter_shrink"), min(excess, st.counterUnits), k.ShopID, k.ItemID, k.LocationID); err != nil {
					return false, err
				}
			}
			if st, err = c.keyState(ctx, tx, route, k); err != nil {
				return false, err
			}
		}
		if st.available-st.safety-st.held-st.pooled < l.Quantity {
			return false, nil // taken by a reservation meanwhile
		}
	}
	raw, err := json.Marshal(w.lines)
	if err != nil {
		return false, err
	}
	status := "held"
	_, err = tx.ExecContext(ctx, c.q(ctx, route, "hold_create"),
		w.shop, w.checkout[:], string(raw), w.ttl.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now())
	switch {
	case isDup(err):
		status = "expired"
	case err != nil:
		return false, err
	default:
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_create"), w.shop, w.checkout[:]); err != nil {
			return false, err
		}
	}
	if _, err := c.endWait(ctx, tx, w.shop, w.checkout, status); err != nil {
		return false, err
	}
	if status == "expired" {
		return true, c.InsertEventTx(ctx, tx, w.shop, holdfast.EventWaitlistExpired, &w.checkout, w.lines, nil)
	}
	h, err := c.readHold(ctx, tx, route, "hold_get", w.shop, w.checkout)
	if err != nil {
		return false, err
	}
	return true, c.InsertEventTx(ctx, tx, w.shop, holdfast.EventWaitlistHeld, &w.checkout, w.lines, &h.ExpiresAt)
}
