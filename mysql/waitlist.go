package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
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

type waiterRow = hfdriver.Waiter

// waitKeys locks the cart's keys' lock rows in key order and reads what
// each key has (hfdriver.Enqueuer.WaitKeys).
func (c *Client) waitKeys(ctx context.Context, tx *sql.Tx, req *reservation) ([]hfdriver.KeyWait, error) {
	const route = holdfast.RouteReserve
	for _, l := range req.Lines {
		if _, err := c.lockKey(ctx, tx, route, holdfast.Key{ShopID: req.Shop, ItemID: l.ItemID, LocationID: l.LocationID}); err != nil {
			return nil, err
		}
	}
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "sellable"), req.Shop, string(req.LinesRaw))
	if err != nil {
		return nil, err
	}
	var kw []hfdriver.KeyWait
	for rows.Next() {
		var k hfdriver.KeyWait
		if err := rows.Scan(&k.Available, &k.Held, &k.Waited); err != nil {
			rows.Close()
			return nil, err
		}
		kw = append(kw, k)
	}
	return kw, rows.Close()
}

// enqueue puts the checkout on the waitlist (hfdriver.Enqueuer.Enqueue).
func (c *Client) enqueue(ctx context.Context, tx *sql.Tx, req *reservation, short []holdfast.Line, shortfalls []holdfast.Shortfall, wait time.Duration) error {
	const route = holdfast.RouteReserve
	shortRaw, err := json.Marshal(shortfalls)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "waitlist_enqueue"), req.Shop, req.Checkout[:], string(req.LinesRaw), string(shortRaw),
		req.TTL.Microseconds(), wait.Microseconds(), req.BuyerHash, c.now())
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
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "waitlist_line_create"), req.Shop, l.ItemID, l.LocationID, seq, req.Checkout[:], l.Quantity); err != nil {
			return err
		}
	}
	for _, l := range short {
		// The key's buffer goes back to unallocated: from now on its units
		// go to its waiters first.
		if err := c.shrink(ctx, tx, route, holdfast.Key{ShopID: req.Shop, ItemID: l.ItemID, LocationID: l.LocationID}, true); err != nil {
			return err
		}
	}
	// The feed says the checkout waits: its keys sell nothing to new
	// buyers from now on (key.sold_out derives from it).
	return c.InsertEventTx(ctx, tx, req.Shop, holdfast.EventWaitlistWaiting, &req.Checkout, req.Lines, nil)
}

// waiterAnswer reads the checkout's wait: *WaitlistedError while it waits,
// ErrWaitExpired once it ran out, ErrWaitCancelled once released,
// ErrWaitUnservable once it could no longer be served,
// ErrIdempotencyConflict when lines (if not nil) differ from the waiting
// cart's, ErrNotFound without a wait, errGranted when it was granted (the
// hold answers then).
func (c *Client) waiterAnswer(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	var status string
	var rawLines, rawShort []byte
	var until time.Time
	var seq int64
	var lapsed, queued bool
	err := tx.QueryRowContext(ctx, c.q(ctx, route, "waitlist_get"), c.now(), shop, checkout[:]).Scan(&status, &rawLines, &rawShort, &until, &seq, &lapsed, &queued)
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
	case status == "waiting" && lapsed:
		// Ran out: answered expired, and ended as expired (event
		// waitlist.expired) by whoever answers this — settleLapsed, in a
		// transaction of its own once this one is over — so the outcome
		// is durable and single: a later release never turns it into
		// another (issue 24 item 5).
		return &waitLapsedError{Shop: shop, Checkout: checkout}
	case status == "expired":
		return holdfast.ErrWaitExpired
	case status == "cancelled":
		return holdfast.ErrWaitCancelled
	case status == "unservable":
		return holdfast.ErrWaitUnservable
	case status != "waiting":
		return errGranted
	}
	we := &holdfast.WaitlistedError{Position: 1, WaitUntil: until}
	if err := json.Unmarshal(rawShort, &we.Lines); err != nil {
		return err
	}
	if !queued {
		we.Position = 0 // a drop's entrant before the draw (engine/drop.go)
		return we
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

// waitOrNotFound is Hold's answer for a checkout without a hold, read in
// the same transaction as the hold (tx): its wait. The hold is read first
// and the wait after it: a grant ends the wait and creates the hold in one
// transaction, so a wait that reads as still waiting was still waiting
// after the hold's read, and one that reads as granted means the grant
// committed in between: the hold is read again and answered. So a read is
// never ErrNotFound for a checkout that waits or was granted (issue 24
// item 4). lines, when not nil, are a reservation's: other lines than the
// wait's are ErrIdempotencyConflict.
func (c *Client) waitOrNotFound(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	werr := c.waiterAnswer(ctx, tx, route, shop, checkout, lines)
	if errors.Is(werr, errGranted) {
		return c.readHold(ctx, tx, route, "hold_get", shop, checkout)
	}
	return nil, werr
}

// waitLapsedError is waiterAnswer's ErrWaitExpired for a wait past its end
// that nothing ended yet (engine/driver.WaitLapsedError).
type waitLapsedError = hfdriver.WaitLapsedError

// expireWait ends a lapsed wait as expired — event waitlist.expired; its
// keys' buffers come back with the next refill (driver.Waits.ExpireWait).
func (c *Client) expireWait(ctx context.Context, tx *sql.Tx, shop int64, checkout uuid.UUID) error {
	_, _, err := c.endWait(ctx, tx, holdfast.RouteRead, shop, checkout, "expired", holdfast.EventWaitlistExpired)
	return err
}

// errGranted: waiterAnswer found the wait granted; the hold answers
// (engine/driver.ErrGranted).
var errGranted = hfdriver.ErrGranted

// rowsAffected is res's count of changed rows (0 when it cannot tell).
func rowsAffected(res sql.Result) int64 {
	n, _ := res.RowsAffected()
	return n
}

// anyWaiting reads whether anybody waits (hfdriver.Waitlist.AnyWaiting).
func (c *Client) anyWaiting(ctx context.Context) (bool, error) {
	var waiting bool
	err := c.db.QueryRowContext(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_any")).Scan(&waiting)
	return waiting, err
}

// refillWaitKeys gives the locked keys their buffers back; keys that still
// have waiters get nothing (key_state.sql reads the mark).
func (c *Client) refillWaitKeys(ctx context.Context, tx *sql.Tx, keys []holdfast.Key, locked map[holdfast.Key]bool) error {
	for _, k := range keys {
		if locked[k] {
			if _, err := c.refillKey(ctx, tx, true, holdfast.RouteReplenish, k, false, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// keysJSON is keys as JSON [[shop, item, location], …].
func keysJSON(keys []holdfast.Key) string {
	out := make([][3]int64, len(keys))
	for i, k := range keys {
		out[i] = [3]int64{k.ShopID, k.ItemID, k.LocationID}
	}
	raw, _ := json.Marshal(out)
	return string(raw)
}

// waitWindow is the next limit keys with waiters after from, in key order.
func (c *Client) waitWindow(ctx context.Context, tx *sql.Tx, from holdfast.Key, limit int) ([]holdfast.Key, error) {
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_window"),
		from.ShopID, from.ShopID, from.ItemID, from.ItemID, from.LocationID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []holdfast.Key
	for rows.Next() {
		var k holdfast.Key
		if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// waitHeads is the front waiters of keys' queues, oldest first
// (waitlist_heads.sql).
func (c *Client) waitHeads(ctx context.Context, tx *sql.Tx, keys []holdfast.Key) ([]waiterRow, error) {
	now := c.now()
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_heads"), now, keysJSON(keys), now, now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []waiterRow
	for rows.Next() {
		var w waiterRow
		var id, raw []byte
		var ttl int64
		if err := rows.Scan(&w.Shop, &id, &w.Seq, &raw, &ttl, &w.BuyerHash); err != nil {
			return nil, err
		}
		copy(w.Checkout[:], id)
		w.TTL = time.Duration(ttl) * time.Microsecond
		if err := json.Unmarshal(raw, &w.Lines); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// endUnservable ends the waits on keys (whose lock rows tx holds) that ask
// more of a key than its available stock: nothing could ever serve them
// (issue 24 item 4). Their other keys' buffers come back with the next
// refill.
func (c *Client) endUnservable(ctx context.Context, tx *sql.Tx, keys []holdfast.Key) (int, error) {
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_unservable"), keysJSON(keys), holdfast.WaitlistGrantsMax)
	if err != nil {
		return 0, err
	}
	type waiter struct {
		Shop     int64
		Checkout uuid.UUID
	}
	var ws []waiter
	for rows.Next() {
		var w waiter
		var id []byte
		if err := rows.Scan(&w.Shop, &id); err != nil {
			rows.Close()
			return 0, err
		}
		copy(w.Checkout[:], id)
		ws = append(ws, w)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	n := 0
	for _, w := range ws {
		_, ok, err := c.endWait(ctx, tx, holdfast.RouteReplenish, w.Shop, w.Checkout, "unservable", holdfast.EventWaitlistUnservable)
		if err != nil {
			return 0, err
		}
		if ok {
			n++
		}
	}
	return n, nil
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
		ds = append(ds, d)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	n := 0
	for _, d := range ds {
		_, ended, err := c.endWait(ctx, tx, route, d.shop, d.checkout, "expired", holdfast.EventWaitlistExpired)
		if err != nil {
			return 0, err
		}
		if ended {
			n++
		}
	}
	return n, nil
}

// endWait ends the checkout's wait if it still waits, as status, unmarks
// its keys, writes an event of type ev (none when ev is empty) and returns
// its cart; ok false when it no longer waited.
func (c *Client) endWait(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID, status string, ev holdfast.EventType) (lines []holdfast.Line, ok bool, err error) {
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "waitlist_end"), c.now(), status, c.now(), shop, checkout[:])
	if err != nil {
		return nil, false, err
	}
	if rowsAffected(res) == 0 {
		return nil, false, nil
	}
	if _, err = tx.ExecContext(ctx, c.q(ctx, route, "waitlist_unmark"), shop, checkout[:]); err != nil {
		return nil, false, err
	}
	var raw []byte
	var ended string
	if err := tx.QueryRowContext(ctx, c.q(ctx, route, "waitlist_cart"), shop, checkout[:]).Scan(&raw, &ended); err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, false, err
	}
	if ended == "expired" && status != "expired" {
		// Past its wait: it ran out, whatever ended it now (a read has
		// answered it expired already); one outcome, recorded once.
		return lines, false, c.InsertEventTx(ctx, tx, shop, holdfast.EventWaitlistExpired, &checkout, lines, nil)
	}
	if ev != "" {
		if err := c.InsertEventTx(ctx, tx, shop, ev, &checkout, lines, nil); err != nil {
			return nil, false, err
		}
	}
	return lines, true, nil
}

// cancelWait ends the checkout's wait as cancelled if it still waits
// (event waitlist.cancelled) (driver.Waits.CancelWait; what Release
// answers is the engine's).
func (c *Client) cancelWait(ctx context.Context, tx *sql.Tx, route string, shop int64, checkout uuid.UUID) (bool, error) {
	_, ok, err := c.endWait(ctx, tx, route, shop, checkout, "cancelled", holdfast.EventWaitlistCancelled)
	return ok, err
}

// grantWait holds w's cart whole, from units no buffer and no hold has,
// under its keys' lock rows (which tx holds), and ends the wait; false
// when the cart cannot be served yet. A cart asking more of a key than its
// available stock ends as unservable. A checkout that got a hold of its
// own meanwhile ends its wait as expired.
func (c *Client) grantWait(ctx context.Context, tx *sql.Tx, w waiterRow) (bool, error) {
	const route = holdfast.RouteReplenish
	sts := make([]keyState, len(w.Lines))
	for i, l := range w.Lines {
		st, err := c.keyState(ctx, tx, route, holdfast.Key{ShopID: w.Shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if err != nil {
			return false, err
		}
		if l.Quantity > st.available-st.safety {
			// Nothing can ever serve it (held units may come back,
			// claimed ones never do): it ends, and stops holding up the
			// key.
			_, ok, err := c.endWait(ctx, tx, route, w.Shop, w.Checkout, "unservable", holdfast.EventWaitlistUnservable)
			return ok, err
		}
		sts[i] = st
	}
	for i, l := range w.Lines {
		if st := sts[i]; st.available-st.safety-st.held < l.Quantity { // never the safety stock
			return false, nil
		}
	}
	if w.BuyerHash != nil {
		// Held to the buyer's limits as a reservation of the buyer is: its
		// lock rows of the cart's items, then the count. Taken here after
		// the keys' lock rows, against a reservation's order (buyer rows,
		// then keys): a reservation of the buyer in flight on these keys
		// is a deadlock InnoDB detects at once, and the retry clears.
		over, err := c.enforceBuyer(ctx, tx, true, route, w.Shop, w.Checkout, w.Lines, w.BuyerHash)
		if err != nil {
			return false, err
		}
		if over != nil {
			// The grant would take the buyer past a limit: the wait ends
			// as unservable, and stops holding up the key.
			_, ok, err := c.endWait(ctx, tx, route, w.Shop, w.Checkout, "unservable", holdfast.EventWaitlistUnservable)
			return ok, err
		}
	}
	// Make room: units still in a buffer (keys of the cart without
	// waiters) go back to unallocated, as many as the line needs.
	for _, l := range w.Lines {
		k := holdfast.Key{ShopID: w.Shop, ItemID: l.ItemID, LocationID: l.LocationID}
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
				excess -= int(rowsAffected(res))
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
	// The wait ends first, guarded by its state: a release that cancelled
	// it meanwhile wins, and then nothing is held (issue 24 item 5).
	if _, ok, err := c.endWait(ctx, tx, route, w.Shop, w.Checkout, "held", ""); err != nil || !ok {
		return false, err
	}
	raw, err := json.Marshal(w.Lines)
	if err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_create"),
		w.Shop, w.Checkout[:], string(raw), w.TTL.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now(), w.Shop, w.Checkout[:])
	switch {
	case isDup(err) || (err == nil && rowsAffected(res) == 0):
		// The checkout has a hold of its own: nothing held for the wait.
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "waitlist_reend"), w.Shop, w.Checkout[:]); err != nil {
			return false, err
		}
		return true, c.InsertEventTx(ctx, tx, w.Shop, holdfast.EventWaitlistExpired, &w.Checkout, w.Lines, nil)
	case err != nil:
		return false, err
	}
	if w.BuyerHash != nil {
		// The wait's buyer is the hold's: its retry replays the hold, and
		// the hold counts towards its limits.
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "buyer_tag"), w.BuyerHash, w.Shop, w.Checkout[:]); err != nil {
			return false, err
		}
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_create"), w.Shop, w.Checkout[:]); err != nil {
		return false, err
	}
	h, err := c.readHold(ctx, tx, route, "hold_get", w.Shop, w.Checkout)
	if err != nil {
		return false, err
	}
	return true, c.InsertEventTx(ctx, tx, w.Shop, holdfast.EventWaitlistHeld, &w.Checkout, w.Lines, &h.ExpiresAt)
}
