package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/engine/driver"
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
type waiterRow = driver.Waiter

// waitKeys locks the cart's keys in key order and reads what each has
// (driver.Enqueuer.WaitKeys).
func (c *Client) waitKeys(ctx context.Context, tx pgx.Tx, req *reservation) ([]driver.KeyWait, error) {
	for _, l := range req.Lines {
		if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReserve, "lock_key"), keyHash(holdfast.Key{ShopID: req.Shop, ItemID: l.ItemID, LocationID: l.LocationID})); err != nil {
			return nil, err
		}
	}
	items, locs, _ := columns(req.Lines)
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReserve, "waitlist_keys"), req.Shop, items, locs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.KeyWait, error) {
		var k driver.KeyWait
		err := r.Scan(&k.Available, &k.Held, &k.Waited)
		return k, err
	})
}

// enqueue puts the checkout on the waitlist (driver.Enqueuer.Enqueue).
func (c *Client) enqueue(ctx context.Context, tx pgx.Tx, req *reservation, short []holdfast.Line, shortfalls []holdfast.Shortfall, wait time.Duration) error {
	shortRaw, err := json.Marshal(shortfalls)
	if err != nil {
		return err
	}
	var seq int64
	err = tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReserve, "waitlist_enqueue"), req.Shop, req.Checkout, string(req.LinesRaw), string(shortRaw),
		req.TTL.Microseconds(), wait.Microseconds(), c.now(), req.BuyerHash).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return errRetry // enqueued meanwhile: answer it
	}
	if err != nil {
		return err
	}
	si, sl, sq := columns(short)
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReserve, "waitlist_lines_create"), req.Shop, req.Checkout, seq, si, sl, sq); err != nil {
		return err
	}
	for _, l := range short {
		// The key's buffer goes back to unallocated: from now on its units
		// go to its waiters first.
		if err := c.shrink(ctx, tx, holdfast.RouteReserve, holdfast.Key{ShopID: req.Shop, ItemID: l.ItemID, LocationID: l.LocationID}, true, 0); err != nil {
			return err
		}
	}
	// The feed says the checkout waits: its keys sell nothing to new
	// buyers from now on (key.sold_out derives from it).
	return InsertEventTx(ctx, tx, req.Shop, holdfast.EventWaitlistWaiting, &req.Checkout, req.Lines, nil)
}

// waiterAnswer reads the checkout's wait: *WaitlistedError while it waits,
// ErrWaitExpired once it ran out, ErrWaitCancelled once released,
// ErrWaitUnservable once it could no longer be served,
// ErrIdempotencyConflict when lines (if not nil) differ from the waiting
// cart's, ErrNotFound without a wait, errGranted when it was granted (the
// hold answers then).
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
	case status == "waiting" && lapsed:
		// Ran out: answered expired, so ended as expired now (event
		// waitlist.expired) — the outcome is durable and single, never
		// turned into another by a later release (issue 24 item 5).
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
	case status == "waiting":
		we := &holdfast.WaitlistedError{Position: pos, WaitUntil: until}
		if err := json.Unmarshal(rawShort, &we.Lines); err != nil {
			return err
		}
		return we
	}
	return errGranted
}

// waitOrNotFound is Hold's answer for a checkout without a hold, read in
// the same transaction as the hold (tx): its wait. The hold is read first
// and the wait after it: a grant ends the wait and creates the hold in one
// transaction, so a wait that reads as still waiting was still waiting
// after the hold's read, and one that reads as granted means the grant
// committed in between: the hold is read again and answered. So a read is
// never ErrNotFound for a checkout that waits or was granted (issue 24
// item 4).
// lines, when not nil, are a reservation's: other lines than the wait's
// are ErrIdempotencyConflict.
func (c *Client) waitOrNotFound(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	werr := c.waiterAnswer(ctx, tx, route, shop, checkout, lines)
	if errors.Is(werr, errGranted) {
		return c.getHold(ctx, tx, route, shop, checkout)
	}
	return nil, werr
}

// waitLapsedError is waiterAnswer's ErrWaitExpired for a wait past its end
// that nothing ended yet (engine/driver.WaitLapsedError).
type waitLapsedError = driver.WaitLapsedError

// expireWait ends a lapsed wait as expired — event waitlist.expired, its
// keys to the replenisher (driver.Waits.ExpireWait). A wait ended
// meanwhile (the worker, a release) is left as it ended: it ended as
// expired too (waitlist_end.sql).
func (c *Client) expireWait(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID) error {
	lines, ok, err := c.endWait(ctx, tx, holdfast.RouteRead, shop, checkout, "expired", "")
	if err != nil || !ok {
		return err
	}
	return c.recordExpired(ctx, tx, holdfast.RouteRead, shop, checkout, lines)
}

// errGranted: waiterAnswer found the wait granted; the hold answers
// (engine/driver.ErrGranted).
var errGranted = driver.ErrGranted

// anyWaiting reads whether anybody waits, on the maintenance connections
// (driver.Waitlist.AnyWaiting).
func (c *Client) anyWaiting(ctx context.Context) (bool, error) {
	var waiting bool
	err := c.maintenance().QueryRow(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_any")).Scan(&waiting)
	return waiting, err
}

// waitServeLock takes the one waitlist server lock (driver.Waitlist).
func (c *Client) waitServeLock(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_serve_lock"))
	return err
}

// waitWindow is the next limit keys with waiters after from, in key order.
func (c *Client) waitWindow(ctx context.Context, tx pgx.Tx, from holdfast.Key, limit int) ([]holdfast.Key, error) {
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_window"), from.ShopID, from.ItemID, from.LocationID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (holdfast.Key, error) {
		var k holdfast.Key
		err := r.Scan(&k.ShopID, &k.ItemID, &k.LocationID)
		return k, err
	})
}

// waitHeads is the front waiters of keys' queues, oldest first
// (waitlist_heads.sql).
func (c *Client) waitHeads(ctx context.Context, tx pgx.Tx, keys []holdfast.Key) ([]waiterRow, error) {
	shops, items, locs := make([]int64, len(keys)), make([]int64, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		shops[i], items[i], locs[i] = k.ShopID, k.ItemID, k.LocationID
	}
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_heads"), shops, items, locs, c.now())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (waiterRow, error) {
		var w waiterRow
		var raw []byte
		var ttl int64
		if err := r.Scan(&w.Shop, &w.Checkout, &w.Seq, &raw, &ttl, &w.BuyerHash); err != nil {
			return w, err
		}
		w.TTL = time.Duration(ttl) * time.Microsecond
		return w, json.Unmarshal(raw, &w.Lines)
	})
}

// endUnservable ends the waits on keys (whose locks tx holds) that ask
// more of a key than its available stock: nothing could ever serve them
// (issue 24 item 4). Their keys outside locked go to the replenisher.
func (c *Client) endUnservable(ctx context.Context, tx pgx.Tx, keys []holdfast.Key, locked map[holdfast.Key]bool) (int, error) {
	shops, items, locs := make([]int64, len(keys)), make([]int64, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		shops[i], items[i], locs[i] = k.ShopID, k.ItemID, k.LocationID
	}
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_unservable"), shops, items, locs, holdfast.WaitlistGrantsMax)
	if err != nil {
		return 0, err
	}
	type waiter struct {
		Shop     int64
		Checkout uuid.UUID
	}
	ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (waiter, error) {
		var w waiter
		err := r.Scan(&w.Shop, &w.Checkout)
		return w, err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	var others []holdfast.Key
	for _, w := range ws {
		lines, ok, err := c.endWait(ctx, tx, holdfast.RouteReplenish, w.Shop, w.Checkout, "unservable", holdfast.EventWaitlistUnservable)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		n++
		for _, l := range lines {
			if k := (holdfast.Key{ShopID: w.Shop, ItemID: l.ItemID, LocationID: l.LocationID}); !locked[k] {
				others = append(others, k)
			}
		}
	}
	if len(others) > 0 {
		slices.SortFunc(others, holdfast.Key.Compare)
		if err := c.queueKeys(ctx, tx, holdfast.RouteReplenish, slices.Compact(others)); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// endWait ends the checkout's wait if it still waits, as status, with an
// event of type ev (none when ev is empty), and returns its cart; ok false
// when it no longer waited.
func (c *Client) endWait(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID, status string, ev holdfast.EventType) (lines []holdfast.Line, ok bool, err error) {
	var raw []byte
	var ended string
	err = tx.QueryRow(ctx, c.q(ctx, route, "waitlist_end"), shop, checkout, status, c.now()).Scan(&raw, &ended)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, false, err
	}
	if ended == "expired" && status != "expired" {
		// Past its wait: it ran out, whatever ended it now (a read has
		// answered it expired already); one outcome, recorded once.
		if err := c.recordExpired(ctx, tx, route, shop, checkout, lines); err != nil {
			return nil, false, err
		}
		return lines, false, nil
	}
	if ev != "" {
		if err := InsertEventTx(ctx, tx, shop, ev, &checkout, lines, nil); err != nil {
			return nil, false, err
		}
	}
	return lines, true, nil
}

// recordExpired writes the expiry of a wait just ended as expired (event
// waitlist.expired) and queues its keys for the replenisher (a key whose
// last waiter left gets its buffer back).
func (c *Client) recordExpired(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	if err := InsertEventTx(ctx, tx, shop, holdfast.EventWaitlistExpired, &checkout, lines, nil); err != nil {
		return err
	}
	keys := make([]holdfast.Key, len(lines))
	for i, l := range lines {
		keys[i] = holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
	}
	slices.SortFunc(keys, holdfast.Key.Compare)
	return c.queueKeys(ctx, tx, route, slices.Compact(keys))
}

// cancelWait ends the checkout's wait as cancelled if it still waits
// (event waitlist.cancelled) and queues its keys for the replenisher
// (driver.Waits.CancelWait; what Release answers is the engine's).
func (c *Client) cancelWait(ctx context.Context, tx pgx.Tx, route string, shop int64, checkout uuid.UUID) (bool, error) {
	lines, ok, err := c.endWait(ctx, tx, route, shop, checkout, "cancelled", holdfast.EventWaitlistCancelled)
	if err != nil || !ok {
		return false, err
	}
	keys := engine.KeysOf(shop, lines)
	slices.SortFunc(keys, holdfast.Key.Compare)
	if err := c.queueKeys(ctx, tx, route, slices.Compact(keys)); err != nil {
		return false, err
	}
	return true, nil
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
		slices.SortFunc(keys, holdfast.Key.Compare)
		if err := c.queueKeys(ctx, tx, holdfast.RouteReplenish, slices.Compact(keys)); err != nil {
			return 0, err
		}
	}
	return len(done), nil
}

// grantWait holds w's cart whole, from units no buffer and no hold has,
// under its keys' locks (which tx holds), and ends the wait; nil when the
// cart cannot be served yet (done false). A cart asking more of a key
// than its available stock ends as unservable (done, no hold). A checkout
// that got a hold of its own meanwhile ends its wait as expired (done, no
// hold).
func (c *Client) grantWait(ctx context.Context, tx pgx.Tx, w waiterRow) (h *holdfast.Hold, done bool, err error) {
	sts := make([]keyState, len(w.Lines))
	for i, l := range w.Lines {
		st, err := c.keyState(ctx, tx, holdfast.RouteReplenish, holdfast.Key{ShopID: w.Shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if err != nil {
			return nil, false, err
		}
		if l.Quantity > st.available-st.safety {
			// Nothing can ever serve it (held units may come back,
			// claimed ones never do): it ends, and stops holding up the
			// key.
			_, ok, err := c.endWait(ctx, tx, holdfast.RouteReplenish, w.Shop, w.Checkout, "unservable", holdfast.EventWaitlistUnservable)
			return nil, ok, err
		}
		sts[i] = st
	}
	for i, l := range w.Lines {
		if st := sts[i]; st.available-st.safety-st.held < l.Quantity { // never the safety stock
			return nil, false, nil
		}
	}
	if w.BuyerHash != nil {
		free, over, err := c.grantBuyer(ctx, tx, w)
		if err != nil || !free {
			return nil, false, err
		}
		if over != nil {
			// The grant would take the buyer past a limit: the wait ends
			// as unservable (it may be served no more than any other
			// reservation of the buyer), and stops holding up the key.
			_, ok, err := c.endWait(ctx, tx, holdfast.RouteReplenish, w.Shop, w.Checkout, "unservable", holdfast.EventWaitlistUnservable)
			return nil, ok, err
		}
	}
	// Make room: units still in a buffer (keys of the cart without
	// waiters) go back to unallocated, as much as the line needs.
	for _, l := range w.Lines {
		k := holdfast.Key{ShopID: w.Shop, ItemID: l.ItemID, LocationID: l.LocationID}
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
	// The wait ends first, guarded by its state: a release that cancelled
	// it meanwhile wins, and then nothing is held (issue 24 item 5).
	if _, ok, err := c.endWait(ctx, tx, holdfast.RouteReplenish, w.Shop, w.Checkout, "held", ""); err != nil || !ok {
		return nil, false, err
	}
	raw, err := json.Marshal(w.Lines)
	if err != nil {
		return nil, false, err
	}
	h = &holdfast.Hold{CheckoutID: w.Checkout, ShopID: w.Shop, Status: holdfast.StatusHeld, Claimable: true, Lines: w.Lines, Revision: 1}
	err = tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReplenish, "hold_insert"),
		w.Checkout, w.Shop, string(raw), w.TTL.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now(), false,
	).Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline)
	if errors.Is(err, pgx.ErrNoRows) {
		// The checkout has a hold of its own: nothing held for the wait.
		if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "waitlist_reend"), w.Shop, w.Checkout); err != nil {
			return nil, false, err
		}
		return nil, true, InsertEventTx(ctx, tx, w.Shop, holdfast.EventWaitlistExpired, &w.Checkout, w.Lines, nil)
	}
	if err != nil {
		return nil, false, err
	}
	if w.BuyerHash != nil {
		// The wait's buyer is the hold's: its retry replays the hold, and
		// the hold counts towards its limits.
		if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "buyer_tag"), w.Shop, w.Checkout, w.BuyerHash); err != nil {
			return nil, false, err
		}
	}
	items, locs, qtys := columns(w.Lines)
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "hold_lines_create"), w.Checkout, w.Shop, items, locs, qtys, h.ExpiresAt, h.CreatedAt); err != nil {
		return nil, false, err
	}
	return h, true, InsertEventTx(ctx, tx, w.Shop, holdfast.EventWaitlistHeld, &w.Checkout, w.Lines, &h.ExpiresAt)
}

// grantBuyer holds a grant to w's buyer's limits, as a reservation of the
// buyer is held: the buyer's locks of the cart's items in item order, then
// the count in a statement after them. The grant runs under the keys'
// locks, after a reservation's place for the buyer's locks, so it only
// tries them: free false when one is taken (a reservation of the buyer is
// in flight; a later pass grants). over: the limit the grant would exceed.
func (c *Client) grantBuyer(ctx context.Context, tx pgx.Tx, w waiterRow) (free bool, over *holdfast.BuyerLimitError, err error) {
	const route = holdfast.RouteReplenish
	items, qtys := holdfast.BuyerItemQuantities(w.Lines)
	for _, item := range items {
		k1, k2 := buyerLockKey(w.Shop, item, w.BuyerHash)
		if err := tx.QueryRow(ctx, c.q(ctx, route, "buyer_trylock"), k1, k2).Scan(&free); err != nil || !free {
			return false, nil, err
		}
	}
	rows, err := tx.Query(ctx, c.q(ctx, route, "buyer_count"), w.Shop, w.BuyerHash, w.Checkout, items, c.now())
	if err != nil {
		return false, nil, err
	}
	counts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.BuyerCount, error) {
		var n driver.BuyerCount
		err := r.Scan(&n.ItemID, &n.Limit, &n.Held)
		return n, err
	})
	if err != nil {
		return false, nil, err
	}
	return true, engine.OverBuyerLimits(counts, items, qtys), nil
}
