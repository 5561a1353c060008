package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// reservation is a validated ReserveParams (engine/driver.Reservation).
type reservation = hfdriver.Reservation

// soldOut answers a reservation on a key that recently sold out without a
// transaction: the lines short by one read of available and held, unless
// the checkout already has a hold or outcome (then the normal path answers
// it). Empty means: go the normal way.
//
// The stock is read before the hold (two statements, two snapshots, in
// that order): a first attempt of the checkout that committed before the
// stock read is seen by the later hold read, so its units are never
// counted as held against its own retry (docs/FAULTS.md finding 7; read
// the other way round, a commit between the two made the retry count its
// own hold and answer sold out). Between the two it probes the checkout's
// in-flight mark without waiting: an attempt still uncommitted may yet
// hold the checkout, so the normal path answers (waiting for it there).
func (c *Client) soldOut(ctx context.Context, req *reservation) ([]holdfast.Shortfall, error) {
	const route = holdfast.RouteReserve
	rows, err := c.db.QueryContext(ctx, c.q(ctx, route, "sellable"), req.Shop, string(req.LinesRaw))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var short []holdfast.Shortfall
	for i := 0; rows.Next() && i < len(req.Lines); i++ {
		var avail, held int
		var waited bool
		if err := rows.Scan(&avail, &held, &waited); err != nil {
			return nil, err
		}
		if waited {
			avail = 0 // units coming back go to the key's waiters first
		}
		if s := max(0, avail-held); s < req.Lines[i].Quantity {
			short = append(short, holdfast.Shortfall{ItemID: req.Lines[i].ItemID, LocationID: req.Lines[i].LocationID, Requested: req.Lines[i].Quantity, Sellable: s})
		}
	}
	if err := rows.Err(); err != nil || len(short) == 0 {
		return nil, err
	}
	rows.Close()
	// An attempt of this checkout still in flight may yet hold it: the
	// normal path waits for it (inflight.go). Probed after the stock read,
	// so an attempt that committed before the probe is seen by the hold
	// read below.
	if busy, err := c.inFlight(ctx, req.Shop, req.Checkout); err != nil {
		return nil, err
	} else if busy {
		return nil, errInFlight
	}
	var status string
	err = c.db.QueryRowContext(ctx, c.q(ctx, route, "hold_status"), req.Shop, req.Checkout[:], req.Shop, req.Checkout[:]).Scan(&status)
	if err == nil || !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return short, nil
}

// reserveOnce is one attempt: take every line's units from its key's
// buffer, then create the hold and its lines. Units are taken first so that
// a sold-out answer writes nothing (seed decision 3: the units table first,
// then reserved_quantities); a concurrent retry of the same checkout waits
// on its in-flight mark, written first (inflight.go), and then finds the
// hold.
func (c *Client) reserveOnce(ctx context.Context, tx *sql.Tx, own bool, req *reservation, mode takeMode) (*holdfast.Hold, error) {
	const route = holdfast.RouteReserve
	// The checkout's in-flight mark before anything else (inflight.go).
	if err := c.markInFlight(ctx, tx, req.Shop, req.Checkout); err != nil {
		return nil, err
	}
	var buyerHash []byte
	if req.Buyer != "" {
		// The buyer's lock rows first (the lock order, buyer.go).
		var h *holdfast.Hold
		var err error
		if buyerHash, h, err = c.checkBuyer(ctx, tx, own, req); err != nil {
			return h, err
		}
	}
	short, err := c.take(ctx, tx, own, route, req.Shop, req.Lines, req.LinesRaw, mode)
	if err != nil {
		return nil, err
	}
	if len(short) > 0 {
		// A retry of a reservation made before the stock ran out is
		// answered with its hold, not with sold out.
		h, err := c.existing(ctx, tx, req)
		if errors.Is(err, holdfast.ErrNotFound) {
			return nil, &holdfast.InsufficientStockError{Lines: short}
		}
		return h, err
	}
	id := req.Checkout[:]
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_create"),
		req.Shop, id, string(req.LinesRaw), req.TTL.Microseconds(), c.cfg.HoldLifetimeMax.Microseconds(), c.now(), req.Shop, id)
	if isDup(err) || (err == nil && rowsAffected(res) == 0) { // 0: the checkout waits (waitlist.go)
		h, err := c.existing(ctx, tx, req)
		if errors.Is(err, holdfast.ErrNotFound) {
			return nil, errRetry // purged between the insert and this read
		}
		return h, err
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "hold_lines_create"), req.Shop, id); err != nil {
		return nil, err
	}
	if buyerHash != nil {
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "buyer_tag"), buyerHash, req.Shop, id); err != nil {
			return nil, err
		}
	}
	h, err := c.readHold(ctx, tx, route, "hold_get", req.Shop, req.Checkout)
	if err != nil {
		return nil, err
	}
	h.Lines = req.Lines
	return h, nil
}

// existing answers a Reserve whose checkout already has a hold or outcome,
// or a wait.
// A replay returns the hold with errRollback, so the units this attempt took
// go back. ErrNotFound means the checkout is new.
func (c *Client) existing(ctx context.Context, tx *sql.Tx, req *reservation) (*holdfast.Hold, error) {
	h, err := c.readHold(ctx, tx, holdfast.RouteReserve, "hold_get", req.Shop, req.Checkout)
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
type takeMode = hfdriver.TakeMode

const (
	takeFast   = hfdriver.TakeFast
	takeRetry  = hfdriver.TakeRetry
	takeLocked = hfdriver.TakeLocked
)

// take removes every line's quantity from its key's buffer, or returns the
// lines that are genuinely short, with their sellable stock.
func (c *Client) take(ctx context.Context, tx *sql.Tx, own bool, route string, shop int64, lines []holdfast.Line, linesRaw []byte, mode takeMode) ([]holdfast.Shortfall, error) {
	// The slowest path takes every key's lock row first, in key order, and
	// reads the strategies under them: a strategy change (which takes the
	// lock row) then cannot make the take use one buffer and the refill
	// another.
	var locked []bool
	if mode == takeLocked {
		locked = make([]bool, len(lines))
		for i, l := range lines {
			var err error
			if locked[i], err = c.lockKey(ctx, tx, route, holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}); err != nil {
				return nil, err
			}
		}
	}
	infos, err := c.keyInfos(ctx, tx, route, shop, lines, linesRaw, mode != takeFast)
	if err != nil {
		return nil, err
	}
	if mode == takeFast {
		missed, err := c.takeLines(ctx, tx, route, shop, lines, infos, true, nil)
		if err != nil {
			return nil, err
		}
		if len(missed) == 0 {
			// Pool keys are topped up before they run dry (the engine's
			// count; the takes in callers' transactions are seen nowhere
			// else): a dry pool sends reservers in callers' transactions
			// to the locked path, which keeps the key's lock row until the
			// caller commits, and the key's reservers then pass one
			// caller's transaction at a time.
			for i, l := range lines {
				if strategyOf(infos[i].strategy).pooled {
					engine.NotePoolTaken(c.engineClient, holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}, l.Quantity, infos[i].cap)
				}
			}
			return nil, nil
		}
	}
	// Sold out is cheap: lines that cannot be served even with a full
	// refill are answered from one snapshot, before any lock is taken.
	sellable, err := c.sellable(ctx, tx, route, shop, linesRaw)
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
	var refill func(i int) error
	if mode == takeLocked {
		// Each buffer is refilled under its key's lock row right before its
		// take, so counter rows are still locked in key order (a refill that
		// locked the counter of a later key before the take of an earlier
		// one closed a cycle with a plain reservation). Pool refills only
		// insert.
		refill = func(i int) error {
			if !locked[i] {
				return nil
			}
			l := lines[i]
			_, err := c.refillKey(ctx, tx, own, route, holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}, true, l.Quantity)
			return err
		}
	}
	missed, err := c.takeLines(ctx, tx, route, shop, lines, infos, false, refill)
	if err != nil {
		return nil, err
	}
	if len(missed) > 0 && mode == takeRetry {
		return nil, errSlowPath // others took the refill first
	}
	// Units in flight to other reservers: sellable by the snapshot but not
	// obtainable now.
	for _, i := range missed {
		l := lines[i]
		short = append(short, holdfast.Shortfall{ItemID: l.ItemID, LocationID: l.LocationID, Requested: l.Quantity, Sellable: sellable[i]})
	}
	return short, nil
}

// takeLines takes every line from its buffer and returns the indexes of
// the lines that came up short (the caller then rolls back). Counter lines
// go first, in key order, each a guarded UPDATE that waits for its row;
// then the pool lines' units in one round trip (a UNION ALL of SELECT …
// FOR UPDATE SKIP LOCKED, then one DELETE), which never waits. So a
// reservation never holds pool rows while it waits for anything: a stock
// change shrinking a pool waits for pool rows, and with pool rows taken
// first it closed a cycle (reserve holds pool rows of B and waits for the
// counter of A; a slow reserve holds A and waits for B's lock row; the
// stock change holds B's lock row and waits for the pool rows). With
// firstMiss it stops at the first short line. refill, when set, is called
// for each line right before its take (pool lines: before the one round
// trip).
func (c *Client) takeLines(ctx context.Context, tx *sql.Tx, route string, shop int64, lines []holdfast.Line, infos []keyInfo, firstMiss bool, refill func(i int) error) ([]int, error) {
	var missed []int
	for i, l := range lines {
		if strategyOf(infos[i].strategy).pooled {
			continue
		}
		if refill != nil {
			if err := refill(i); err != nil {
				return nil, err
			}
		}
		res, err := tx.ExecContext(ctx, c.q(ctx, route, "take_counter"), l.Quantity, shop, l.ItemID, l.LocationID, l.Quantity)
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			missed = append(missed, i)
			if firstMiss {
				return missed, nil
			}
		}
	}
	var poolArgs []any
	var poolLines []int
	for i, l := range lines {
		if strategyOf(infos[i].strategy).pooled {
			poolArgs = append(poolArgs, len(poolLines), shop, l.ItemID, l.LocationID, l.Quantity)
			poolLines = append(poolLines, i)
		}
	}
	if len(poolLines) == 0 {
		return missed, nil
	}
	if refill != nil {
		for _, i := range poolLines {
			if err := refill(i); err != nil {
				return nil, err
			}
		}
	}
	rows, err := tx.QueryContext(ctx, c.takePoolText(ctx, route, len(poolLines)), poolArgs...)
	if err != nil {
		return nil, err
	}
	got := make([]int, len(poolLines))
	taken := make([][3]int64, 0, 16)
	for rows.Next() {
		var line int
		var id int64
		if err := rows.Scan(&line, &id); err != nil {
			rows.Close()
			return nil, err
		}
		got[line]++
		l := lines[poolLines[line]]
		taken = append(taken, [3]int64{l.ItemID, l.LocationID, id})
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for j, i := range poolLines {
		if got[j] < lines[i].Quantity {
			missed = append(missed, i)
		}
	}
	if len(missed) > 0 {
		slices.Sort(missed)
		return missed, nil
	}
	raw, _ := json.Marshal(taken)
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "take_pool_delete"), string(raw), shop); err != nil {
		return nil, err
	}
	return nil, nil
}

// sellable returns available - held per line (never below zero), from one
// snapshot, without locks.
func (c *Client) sellable(ctx context.Context, tx *sql.Tx, route string, shop int64, linesRaw []byte) ([]int, error) {
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "sellable"), shop, string(linesRaw))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
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

// keyInfos returns the strategy of each line's key, from the cache unless
// fresh is set or an entry is stale.
func (c *Client) keyInfos(ctx context.Context, tx *sql.Tx, route string, shop int64, lines []holdfast.Line, linesRaw []byte, fresh bool) ([]keyInfo, error) {
	out := make([]keyInfo, len(lines))
	now := time.Now()
	missing := fresh
	for i, l := range lines {
		if missing {
			break
		}
		v, ok := c.keys.Load(holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if !ok || now.Sub(v.(keyInfo).at) > keyInfoTTL {
			missing = true
			break
		}
		out[i] = v.(keyInfo)
	}
	if !missing {
		return out, nil
	}
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "key_info"), string(c.cfg.Strategy), c.cfg.PoolCap, string(linesRaw), shop)
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
		out[i] = ki
		i++
	}
	return out, rows.Err()
}

// refillInline refills the buffers of a reservation's keys in a short
// transaction of its own, key by key in key order: exactly one transaction
// refills a key at a time (it holds the key's lock row), and the others
// wait for it together (a shared lock on the row) rather than one after
// another, then retry their take.
func (c *Client) refillInline(ctx context.Context, shop int64, lines []holdfast.Line) error {
	const route = holdfast.RouteReplenish
	return c.run(ctx, nil, route, true, func(tx *sql.Tx, _ int) error {
		// Lock rows first, all of them, then buffers: a refill holding one
		// key's counter row while it waited for the next key's lock row
		// closed a cycle with the slowest reserve path.
		var mine []holdfast.Key
		for _, l := range lines {
			k := holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
			got, err := c.exists(ctx, tx, route, "trylock_key", k.ShopID, k.ItemID, k.LocationID)
			if err != nil {
				return err
			}
			if got {
				mine = append(mine, k)
				continue
			}
			if _, err := c.exists(ctx, tx, route, "await_key", k.ShopID, k.ItemID, k.LocationID); err != nil {
				return err
			}
		}
		for _, k := range mine {
			if _, err := c.refillKey(ctx, tx, true, route, k, true, 0); err != nil {
				return err
			}
		}
		return nil
	})
}

// topUpPools refills the pools of keys (in key order) to their caps in a
// transaction of its own, skipping keys whose lock row another transaction
// holds (engine/driver.PoolTopUpper): the top-ups that fast pool takes
// asked for (engine.NotePoolTaken), whatever the low-water mark.
func (c *Client) topUpPools(ctx context.Context, keys []holdfast.Key) error {
	const route = holdfast.RouteReplenish
	return c.run(ctx, nil, route, true, func(tx *sql.Tx, _ int) error {
		for _, k := range keys {
			mine, err := c.exists(ctx, tx, route, "trylock_key", k.ShopID, k.ItemID, k.LocationID)
			if err != nil {
				return err
			}
			if !mine {
				continue // another refill or a locked reservation has it
			}
			if _, err := c.refillKey(ctx, tx, true, route, k, false, 0); err != nil {
				return err
			}
		}
		return nil
	})
}

// exists runs a statement and reports whether it returned a row.
func (c *Client) exists(ctx context.Context, tx *sql.Tx, route, name string, args ...any) (bool, error) {
	var one int
	err := tx.QueryRowContext(ctx, c.q(ctx, route, name), args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// lockKey takes k's lock row, waiting. False: the key does not exist.
func (c *Client) lockKey(ctx context.Context, tx *sql.Tx, route string, k holdfast.Key) (bool, error) {
	return c.exists(ctx, tx, route, "lock_key", k.ShopID, k.ItemID, k.LocationID)
}
