package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/engine/driver"
	"github.com/jackc/pgx/v5"
)

// reservation is a validated ReserveParams (engine/driver.Reservation).
type reservation = driver.Reservation

// soldOut answers a reservation on a key that recently sold out in one
// statement — one snapshot — and no transaction: the lines short in that
// snapshot, unless the checkout already has a hold or outcome in it (then
// the normal path answers it). Empty means: go the normal way.
//
// Another attempt of the checkout still in flight (sold_out_inflight.sql)
// also means the normal way: there the retry waits for it and answers its
// hold, never "sold out" for a checkout that becomes held. Both statements
// go in one round trip, in one implicit transaction (the in-flight check
// first).
func (c *Client) soldOut(ctx context.Context, req *reservation) ([]holdfast.Shortfall, error) {
	items, locs, _ := columns(req.Lines)
	b := &pgx.Batch{}
	b.Queue(c.q(ctx, holdfast.RouteReserve, "sold_out_inflight"), req.Checkout)
	b.Queue(c.q(ctx, holdfast.RouteReserve, "sold_out"), req.Shop, req.Checkout, items, locs)
	br := c.pool.SendBatch(ctx, b)
	defer br.Close()
	var free bool
	if err := br.QueryRow().Scan(&free); err != nil || !free {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var short []holdfast.Shortfall
	for i := 0; rows.Next(); i++ {
		var known bool
		var avail, held int
		if err := rows.Scan(&known, &avail, &held); err != nil {
			return nil, err
		}
		if known {
			return nil, nil
		}
		if s := max(0, avail-held); s < req.Lines[i].Quantity {
			short = append(short, holdfast.Shortfall{ItemID: req.Lines[i].ItemID, LocationID: req.Lines[i].LocationID, Requested: req.Lines[i].Quantity, Sellable: s})
		}
	}
	return short, rows.Err()
}

// reserveOnce is one attempt: create the hold row first — a concurrent
// retry of the same checkout waits for it there, before touching any
// buffer, and then finds it — then take every line's units from its key's
// buffer, then create the hold's lines. A sold-out answer rolls the hold
// row back with the transaction, so it writes nothing.
func (c *Client) reserveOnce(ctx context.Context, tx pgx.Tx, req *reservation, mode takeMode) (*holdfast.Hold, error) {
	if st, ok := tx.(*savepointTx); ok && st.pipelined() && mode == takeFast && req.Buyer == "" {
		if infos, ok := c.cachedKeyInfos(req.Shop, req.Lines); ok {
			h, err := c.reserveTxPipelined(ctx, st, req, infos)
			if !errors.Is(err, errRefused) {
				return h, err
			}
			// Rolled back to the savepoint, still open: the long way.
		}
	}
	h := &holdfast.Hold{CheckoutID: req.Checkout, ShopID: req.Shop, Status: holdfast.StatusHeld, Claimable: true, Lines: req.Lines, Revision: 1}
	err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReserve, "hold_insert"),
		// The lines go as text: as []byte, pgx's exec and simple protocol
		// modes (used behind PgBouncer) would send them as bytea.
		req.Checkout, req.Shop, string(req.LinesRaw), req.TTL.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now(), false,
	).Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline)
	if errors.Is(err, pgx.ErrNoRows) {
		h, err := c.existing(ctx, tx, req)
		if errors.Is(err, holdfast.ErrNotFound) {
			// Purged between the insert and this read: run again.
			return nil, errRetry
		}
		return h, err
	}
	if err != nil {
		return nil, err
	}
	if req.Buyer != "" {
		// After the hold row, before any key lock (the lock order).
		if err := c.checkBuyer(ctx, tx, req); err != nil {
			return nil, err
		}
	}
	short, err := c.take(ctx, tx, holdfast.RouteReserve, req.Shop, req.Lines, mode)
	if err != nil {
		return nil, err
	}
	if len(short) > 0 {
		return nil, &holdfast.InsufficientStockError{Lines: short}
	}
	items, locs, qtys := columns(req.Lines)
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReserve, "hold_lines_create"), req.Checkout, req.Shop, items, locs, qtys, h.ExpiresAt, h.CreatedAt); err != nil {
		return nil, err
	}
	return h, nil
}

// errRefused is reserveTxPipelined's answer when a statement of its
// pipeline refused (HF010): the savepoint was rolled back and is open.
var errRefused = errors.New("holdfast: pipelined reservation refused")

// reserveTxPipelined is reserveOnce's fast attempt inside a caller's
// transaction in one round trip: SAVEPOINT, the hold row, every line's take,
// the lines and RELEASE go as one pipeline (issue #29 item 4: each round
// trip of a caller's transaction waits for a CPU on both sides). Nothing
// after a statement that fails runs; the strict hold insert and takes fail
// (HF010, holdfast_refuse) rather than create nothing or take short, so the
// lines and the RELEASE run only when the hold row is new and every unit
// was taken. On HF010 it rolls back to the savepoint, keeps it, and answers
// errRefused: reserveOnce goes on the long way, which tells a replay, a
// conflict, a wait, sold out and the slow path apart. Other errors leave
// the savepoint to the attempt's rollback (or there is none: the SAVEPOINT
// itself failed). Only for keys whose strategies are cached: the long way
// reads and caches them.
func (c *Client) reserveTxPipelined(ctx context.Context, st *savepointTx, req *reservation, infos []keyInfo) (*holdfast.Hold, error) {
	route := holdfast.RouteReserve
	h := &holdfast.Hold{CheckoutID: req.Checkout, ShopID: req.Shop, Status: holdfast.StatusHeld, Claimable: true, Lines: req.Lines, Revision: 1}
	items, locs, qtys := columns(req.Lines)
	b := &pgx.Batch{}
	b.Queue(c.q(ctx, route, "hold_insert"), req.Checkout, req.Shop, string(req.LinesRaw), req.TTL.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now(), true)
	for i, l := range req.Lines {
		c.queueTake(ctx, b, route, infos[i].strategy, req.Shop, l, true)
	}
	b.Queue(c.q(ctx, route, "hold_lines_create_held"), req.Checkout, req.Shop, items, locs, qtys)
	br := st.pipeline(ctx, b, true)
	err := br.QueryRow().Scan(&h.CreatedAt, &h.ExpiresAt, &h.Deadline)
	for range req.Lines {
		if err != nil {
			break
		}
		var got int
		err = br.QueryRow().Scan(&got)
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if SQLState(err) == sqlstateRefused {
		if err := st.rollbackKeep(ctx); err != nil {
			return nil, err
		}
		return nil, errRefused
	}
	if err != nil {
		return nil, err
	}
	for i, l := range req.Lines {
		if strategyOf(infos[i].strategy).pooled {
			engine.NotePoolTaken(c.engineClient, holdfast.Key{ShopID: req.Shop, ItemID: l.ItemID, LocationID: l.LocationID}, l.Quantity, infos[i].cap)
		}
	}
	return h, nil
}

// existing answers a Reserve whose checkout already has a hold or outcome,
// or a wait.
// A replay returns the hold with errRollback (this attempt wrote nothing to
// keep). ErrNotFound means the checkout is new.
func (c *Client) existing(ctx context.Context, tx pgx.Tx, req *reservation) (*holdfast.Hold, error) {
	h, err := c.getHold(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout)
	if errors.Is(err, holdfast.ErrNotFound) {
		// A checkout that waits (or waited) answers its wait, and other
		// lines are a conflict (waitlist.go).
		h, err = c.waitOrNotFound(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout, req.Lines)
		if engine.IsWaitAnswer(err) {
			// The wait is its buyer's, as a hold is.
			if berr := c.sameBuyer(ctx, tx, req); berr != nil {
				return nil, berr
			}
		}
	}
	if err != nil {
		return nil, err
	}
	switch {
	case h.Status == holdfast.StatusClaimed:
		return nil, holdfast.ErrHoldClaimed
	case h.Status == holdfast.StatusReleased:
		return nil, holdfast.ErrHoldReleased
	case h.Status == holdfast.StatusExpired && !h.Claimable:
		return nil, holdfast.ErrHoldExpired
	}
	if !slices.Equal(h.Lines, req.Lines) {
		return nil, holdfast.ErrIdempotencyConflict
	}
	if err := c.sameBuyer(ctx, tx, req); err != nil {
		return nil, err
	}
	h.Replayed = true
	return h, errRollback
}

// takeMode is how take gets units (engine/driver.TakeMode).
type takeMode = driver.TakeMode

const (
	takeFast   = driver.TakeFast
	takeRetry  = driver.TakeRetry
	takeLocked = driver.TakeLocked
)

// take removes every line's quantity from its key's buffer, or returns the
// lines that are genuinely short, with their sellable stock.
func (c *Client) take(ctx context.Context, tx pgx.Tx, route string, shop int64, lines []holdfast.Line, mode takeMode) ([]holdfast.Shortfall, error) {
	infos, err := c.keyInfos(ctx, tx, route, shop, lines, mode != takeFast)
	if err != nil {
		return nil, err
	}
	if mode == takeFast {
		batch := &pgx.Batch{}
		for i, l := range lines {
			c.queueTake(ctx, batch, route, infos[i].strategy, shop, l, false)
		}
		br := tx.SendBatch(ctx, batch)
		short := false
		for _, l := range lines {
			var got int
			if err := br.QueryRow().Scan(&got); err != nil {
				br.Close()
				return nil, err
			}
			short = short || got < l.Quantity
		}
		if err := br.Close(); err != nil {
			return nil, err
		}
		if !short {
			for i, l := range lines {
				if strategyOf(infos[i].strategy).pooled {
					engine.NotePoolTaken(c.engineClient, holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}, l.Quantity, infos[i].cap)
				}
			}
			return nil, nil
		}
	}

	// Sold out is cheap: lines that cannot be served even with a full
	// refill are answered from one snapshot, before any lock is taken. The
	// snapshot counts units in flight to other reservers as sellable, so a
	// line that passes may still come up short below.
	sellable, err := c.sellable(ctx, tx, route, shop, lines)
	if err != nil {
		return nil, err
	}
	var short []holdfast.Shortfall
	for i, l := range lines {
		if sellable[i] < l.Quantity {
			short = append(short, holdfast.Shortfall{ItemID: l.ItemID, LocationID: l.LocationID, Requested: l.Quantity, Sellable: sellable[i]})
		}
	}
	if len(short) > 0 {
		return short, nil
	}
	if mode == takeFast {
		return nil, errSlowPath
	}
	if mode == takeLocked {
		// The slowest path takes every key's lock first, in key order,
		// before it touches any buffer (the documented lock order: key
		// locks, then buffers), then refills right before each take.
		for _, l := range lines {
			if _, err := tx.Exec(ctx, c.q(ctx, route, "lock_key"), keyHash(holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID})); err != nil {
				return nil, err
			}
		}
	}
	for i, l := range lines {
		k := holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
		if mode == takeLocked {
			if err := c.refillKey(ctx, tx, route, k); err != nil {
				return nil, err
			}
		}
		var got int
		switch {
		case strategyOf(infos[i].strategy).pooled && mode == takeLocked:
			got, err = c.takePoolWait(ctx, tx, route, k, l.Quantity)
		case strategyOf(infos[i].strategy).pooled:
			err = tx.QueryRow(ctx, c.q(ctx, route, "take_pool"), shop, l.ItemID, l.LocationID, l.Quantity, false).Scan(&got)
		default:
			got, err = c.gather(ctx, tx, route, k, l.Quantity, true)
		}
		if err != nil {
			return nil, err
		}
		if got < l.Quantity {
			if mode == takeRetry {
				// Others took the refill first: once more, under the lock.
				return nil, errSlowPath
			}
			// Units in flight to other reservers: sellable by the snapshot
			// but not obtainable now.
			short = append(short, holdfast.Shortfall{ItemID: l.ItemID, LocationID: l.LocationID, Requested: l.Quantity, Sellable: sellable[i]})
		}
	}
	return short, nil
}

// takePoolWait takes q units from a pool key under its advisory lock,
// waiting for rows in-flight reservers hold: rows of a reservation that
// rolls back are taken, rows of one that commits are gone. At most q rounds,
// each taking at least one row or ending the loop.
func (c *Client) takePoolWait(ctx context.Context, tx pgx.Tx, route string, k holdfast.Key, q int) (int, error) {
	taken := 0
	for taken < q {
		var got int
		if err := tx.QueryRow(ctx, c.q(ctx, route, "take_pool_wait"), k.ShopID, k.ItemID, k.LocationID, q-taken).Scan(&got); err != nil {
			return 0, err
		}
		if got == 0 {
			break
		}
		taken += got
	}
	return taken, nil
}

// refillKey refills one key's buffer under its advisory lock, which tx
// holds, and counts an inline replenishment when it added units.
func (c *Client) refillKey(ctx context.Context, tx pgx.Tx, route string, k holdfast.Key) error {
	res, err := c.refill(ctx, tx, route, []holdfast.Key{k})
	if err != nil {
		return err
	}
	if res[0].added > 0 {
		c.cfg.Observer.Replenished(k, true, res[0].added)
		if _, err := tx.Exec(ctx, c.q(ctx, route, "note_inline"), k.ShopID, k.ItemID, k.LocationID); err != nil {
			return err
		}
	}
	return nil
}

// refillInline refills the buffers of a reservation's keys in a short
// transaction of its own, key by key in key order: exactly one transaction
// refills a key at a time, and the others wait for it together (a shared
// lock on the key) rather than one after another, then retry their take.
func (c *Client) refillInline(ctx context.Context, shop int64, lines []holdfast.Line) error {
	return c.run(ctx, c.pool, holdfast.RouteReplenish, true, true, func(tx pgx.Tx, _ int) error {
		for _, l := range lines {
			k := holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
			var mine bool
			if err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReplenish, "trylock_key"), keyHash(k)).Scan(&mine); err != nil {
				return err
			}
			if !mine {
				if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "await_key"), keyHash(k)); err != nil {
					return err
				}
				continue
			}
			if err := c.refillKey(ctx, tx, holdfast.RouteReplenish, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// sellable returns available - held per line (never below zero), from one
// snapshot, without locks.
func (c *Client) sellable(ctx context.Context, tx pgx.Tx, route string, shop int64, lines []holdfast.Line) ([]int, error) {
	items, locs, _ := columns(lines)
	rows, err := tx.Query(ctx, c.q(ctx, route, "sellable"), shop, items, locs)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(lines))
	for rows.Next() {
		var avail, held int
		var waited bool
		if err := rows.Scan(&avail, &held, &waited); err != nil {
			return nil, err
		}
		if waited {
			avail = 0 // units coming back go to the key's waiters first
		}
		out = append(out, max(0, avail-held))
	}
	return out, rows.Err()
}

// cachedKeyInfos returns the strategy of each line's key from the cache,
// or false when an entry is missing or stale.
func (c *Client) cachedKeyInfos(shop int64, lines []holdfast.Line) ([]keyInfo, bool) {
	out := make([]keyInfo, len(lines))
	now := time.Now()
	for i, l := range lines {
		v, ok := c.keys.Load(holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if !ok || now.Sub(v.(keyInfo).at) > keyInfoTTL {
			return nil, false
		}
		out[i] = v.(keyInfo)
	}
	return out, true
}

// keyInfos returns the strategy of each line's key, from the cache unless
// fresh is set or an entry is stale.
func (c *Client) keyInfos(ctx context.Context, tx pgx.Tx, route string, shop int64, lines []holdfast.Line, fresh bool) ([]keyInfo, error) {
	if !fresh {
		if out, ok := c.cachedKeyInfos(shop, lines); ok {
			return out, nil
		}
	}
	out := make([]keyInfo, len(lines))
	now := time.Now()
	items, locs, _ := columns(lines)
	rows, err := tx.Query(ctx, c.q(ctx, route, "key_info"), shop, items, locs, string(c.cfg.Strategy), c.cfg.PoolCap)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var item, loc int64
		var strategy string
		var cap int
		if err := rows.Scan(&item, &loc, &strategy, &cap); err != nil {
			return nil, err
		}
		ki := keyInfo{strategy: holdfast.Strategy(strategy), cap: cap, at: now}
		c.keys.Store(holdfast.Key{ShopID: shop, ItemID: item, LocationID: loc}, ki)
		// key_info returns its input's order (ORDER BY); checked, since a
		// wrong pairing would run the wrong take for a line.
		if i >= len(lines) || lines[i].ItemID != item || lines[i].LocationID != loc {
			return nil, fmt.Errorf("holdfast: key_info returned item %d at location %d out of order", item, loc)
		}
		out[i] = ki
		i++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if i != len(lines) {
		return nil, fmt.Errorf("holdfast: key_info returned %d keys for %d lines", i, len(lines))
	}
	return out, nil
}

func columns(lines []holdfast.Line) (items, locs []int64, qtys []int32) {
	items = make([]int64, len(lines))
	locs = make([]int64, len(lines))
	qtys = make([]int32, len(lines))
	for i, l := range lines {
		items[i], locs[i], qtys[i] = l.ItemID, l.LocationID, int32(l.Quantity)
	}
	return items, locs, qtys
}
