package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// ReasonMaxLen bounds a stock change's reason and reference (the columns'
// width).
const ReasonMaxLen = 500

// ChangeIDMaxLen bounds StockChange.ID: holdfast.StockChangeIDMaxLen, as on
// every engine (the column holds up to 200).
const ChangeIDMaxLen = holdfast.StockChangeIDMaxLen

// PoolCapMax bounds a key's pool cap.
const PoolCapMax = 1_000_000

// refillChunk bounds the pool rows one INSERT adds: MySQL's
// cte_max_recursion_depth defaults to 1,000.
const refillChunk = 1000

// changeRequest is what a stock change's ID stands for: a retry must ask
// for the same.
type changeRequest struct {
	ItemID     int64  `json:"item_id"`
	LocationID int64  `json:"location_id"`
	Set        *int   `json:"set,omitempty"`
	Delta      int    `json:"delta"`
	Reason     string `json:"reason"`
	Reference  string `json:"reference"`
	Expect     *int   `json:"expect_available,omitempty"`
}

// changeOutcome is an identified change's recorded answer: its level, or
// the compare-and-set refusal it answered (Changed).
type changeOutcome struct {
	holdfast.Level
	Changed *changedOutcome `json:"stock_changed,omitempty"`
}

type changedOutcome struct {
	Expected int `json:"expected"`
	Current  int `json:"current"`
}

// changeStockOnce is one attempt (driver.Stocker.ChangeStockAttempt).
func (c *Client) changeStockOnce(ctx context.Context, tx *sql.Tx, own bool, ch holdfast.StockChange) (*holdfast.Level, error) {
	req := changeRequest{ItemID: ch.ItemID, LocationID: ch.LocationID, Set: ch.Set, Reason: ch.Reason, Reference: ch.Reference, Expect: ch.ExpectAvailable}
	if ch.Set == nil {
		req.Delta = ch.Delta
	}
	return c.changeOnce(ctx, tx, own, ch, req)
}

func (c *Client) changeOnce(ctx context.Context, tx *sql.Tx, own bool, ch holdfast.StockChange, req changeRequest) (*holdfast.Level, error) {
	const route = holdfast.RouteAdjust
	k := ch.Key
	if ch.ID != "" {
		var rawReq, rawLevel []byte
		err := tx.QueryRowContext(ctx, c.q(ctx, route, "change_find"), k.ShopID, ch.ID).Scan(&rawReq, &rawLevel)
		switch {
		case err == nil:
			var first changeRequest
			var out changeOutcome
			if err := json.Unmarshal(rawReq, &first); err != nil {
				return nil, err
			}
			if !reflect.DeepEqual(first, req) {
				return nil, holdfast.ErrIdempotencyConflict
			}
			if err := json.Unmarshal(rawLevel, &out); err != nil {
				return nil, err
			}
			if out.Changed != nil {
				return nil, &holdfast.StockChangedError{Key: k, Expected: out.Changed.Expected, Current: out.Changed.Current, Index: -1}
			}
			lvl := out.Level
			lvl.Key = k
			lvl.Replayed = true
			return &lvl, nil
		case !errors.Is(err, sql.ErrNoRows):
			return nil, err
		}
	}
	locked, err := c.lockKey(ctx, tx, route, k)
	if err != nil {
		return nil, err
	}
	if !locked {
		_, err := tx.ExecContext(ctx, c.q(ctx, route, "lock_create"), k.ShopID, k.ItemID, k.LocationID)
		if isDup(err) {
			return nil, errRetry // created meanwhile: lock it on the next run
		}
		if err != nil {
			return nil, err
		}
	}
	old, exists := 0, true
	err = tx.QueryRowContext(ctx, c.q(ctx, route, "level_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&old)
	if errors.Is(err, sql.ErrNoRows) {
		exists, err = false, nil
	}
	if err != nil {
		return nil, err
	}
	if ch.ExpectAvailable != nil && *ch.ExpectAvailable != old {
		// Read under the key's lock row and the level row's lock (a key
		// never stocked reads 0): no claim moves it until commit. Nothing
		// is written but an identified change's record of the refusal.
		e := &holdfast.StockChangedError{Key: k, Expected: *ch.ExpectAvailable, Current: old, Index: -1}
		if ch.ID != "" {
			rawReq, _ := json.Marshal(req)
			rawOut, _ := json.Marshal(changeOutcome{Level: holdfast.Level{Key: k}, Changed: &changedOutcome{Expected: e.Expected, Current: old}})
			_, err := tx.ExecContext(ctx, c.q(ctx, route, "change_record"), k.ShopID, ch.ID, string(rawReq), string(rawOut), c.now())
			if isDup(err) {
				return nil, errRetry // a concurrent retry won: answer its outcome
			}
			if err != nil {
				return nil, err
			}
		}
		return nil, e
	}
	next := old + ch.Delta
	if ch.Set != nil {
		next = *ch.Set
	}
	if next < 0 {
		return nil, holdfast.NewArgumentError("delta", "would take available below zero (available %d, delta %d)", old, ch.Delta)
	}
	if next > holdfast.AvailableMax {
		return nil, holdfast.NewArgumentError("delta", "would take available above %d", holdfast.AvailableMax)
	}
	if exists {
		_, err = tx.ExecContext(ctx, c.q(ctx, route, "level_update"), next, c.now(), k.ShopID, k.ItemID, k.LocationID)
	} else {
		_, err = tx.ExecContext(ctx, c.q(ctx, route, "level_insert"), k.ShopID, k.ItemID, k.LocationID, next, c.now())
	}
	if err != nil {
		return nil, err
	}
	var ref any
	if ch.Reference != "" {
		ref = ch.Reference
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "ledger_insert"), k.ShopID, k.ItemID, k.LocationID, next-old, next, ch.Reason, ref, c.now()); err != nil {
		return nil, err
	}
	// A wait the change leaves asking more than could ever be sold ends
	// now, before the refill and the answer: the answer is the level
	// without it (waitlist.go).
	if _, err := c.endUnservable(ctx, tx, []holdfast.Key{k}); err != nil {
		return nil, err
	}
	if err := c.shrink(ctx, tx, route, k, false); err != nil {
		return nil, err
	}
	if _, err := c.refillKey(ctx, tx, own, route, k, false, 0); err != nil {
		return nil, err
	}
	lvl, err := c.level(ctx, tx, route, k)
	if err != nil {
		return nil, err
	}
	if ch.ID != "" {
		rawReq, _ := json.Marshal(req)
		rawLevel, _ := json.Marshal(lvl)
		_, err := tx.ExecContext(ctx, c.q(ctx, route, "change_record"), k.ShopID, ch.ID, string(rawReq), string(rawLevel), c.now())
		if isDup(err) {
			return nil, errRetry // a concurrent retry won: answer its outcome
		}
		if err != nil {
			return nil, err
		}
	}
	return lvl, nil
}

// shrinkRoundsMax bounds shrink's loop.
const shrinkRoundsMax = 1000

// shrink removes units from a key's buffers, under the key's lock row,
// until pooled + held <= available (or the buffers are empty: the key is
// over-committed). With all set it empties the buffers.
func (c *Client) shrink(ctx context.Context, tx *sql.Tx, route string, k holdfast.Key, all bool) error {
	for range shrinkRoundsMax {
		st, err := c.keyState(ctx, tx, route, k)
		if err != nil {
			return err
		}
		excess := st.pooled
		if !all {
			// The buffer never holds units of the safety stock.
			excess = min(st.pooled, st.pooled+st.held-(st.available-st.safety))
		}
		if excess <= 0 {
			return nil
		}
		if st.poolRows > 0 {
			res, err := tx.ExecContext(ctx, c.q(ctx, route, "pool_shrink"), k.ShopID, k.ItemID, k.LocationID, min(excess, st.poolRows))
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			excess -= int(n)
		}
		if excess > 0 && st.counterUnits > 0 {
			if _, err := tx.ExecContext(ctx, c.q(ctx, route, "counter_shrink"), min(excess, st.counterUnits), k.ShopID, k.ItemID, k.LocationID); err != nil {
				return err
			}
		}
	}
	return errors.New("holdfast/mysql: shrink did not converge")
}

// setStrategyOnce is one attempt of SetStrategy (driver.Stocker): under
// the key's lock row, its level row, then its buffers (MySQL's lock
// order).
func (c *Client) setStrategyOnce(ctx context.Context, tx *sql.Tx, k holdfast.Key, s holdfast.Strategy, poolCap int) (*holdfast.Level, error) {
	const route = holdfast.RouteAdjust
	locked, err := c.lockKey(ctx, tx, route, k)
	if err != nil {
		return nil, err
	}
	// A key never stocked gets its lock and level rows (available 0),
	// so the strategy is stored and answered as set, as on PostgreSQL;
	// a reservation still answers not_stocked until stock is set
	// (not_stocked.sql).
	if !locked {
		_, err := tx.ExecContext(ctx, c.q(ctx, route, "lock_create"), k.ShopID, k.ItemID, k.LocationID)
		if isDup(err) {
			return nil, errRetry // created meanwhile: lock it on the next run
		}
		if err != nil {
			return nil, err
		}
	}
	var old int
	err = tx.QueryRowContext(ctx, c.q(ctx, route, "level_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&old)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.ExecContext(ctx, c.q(ctx, route, "level_insert"), k.ShopID, k.ItemID, k.LocationID, 0, c.now())
	}
	if err != nil {
		return nil, err
	}
	var cp any
	if poolCap > 0 {
		cp = poolCap
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "set_strategy"), string(s), cp, k.ShopID, k.ItemID, k.LocationID); err != nil {
		return nil, err
	}
	if err := c.shrink(ctx, tx, route, k, true); err != nil {
		return nil, err
	}
	if _, err := c.refillKey(ctx, tx, true, route, k, false, 0); err != nil {
		return nil, err
	}
	return c.level(ctx, tx, route, k)
}

type keyState struct {
	exists                  bool
	available, held, pooled int
	poolRows, counterUnits  int
	strategy                holdfast.Strategy
	poolCap                 int
	waited                  bool // the key has waiters (waitlist.go)
	safety                  int  // units withheld from sale (safety stock)
}

// keyState reads one key's state in one statement: one read view under
// READ COMMITTED.
func (c *Client) keyState(ctx context.Context, tx *sql.Tx, route string, k holdfast.Key) (keyState, error) {
	var st keyState
	var strategy string
	err := tx.QueryRowContext(ctx, c.q(ctx, route, "key_state"), string(c.cfg.Strategy), c.cfg.PoolCap, k.ShopID, k.ItemID, k.LocationID).
		Scan(&st.exists, &st.available, &st.held, &st.poolRows, &st.counterUnits, &strategy, &st.poolCap, &st.waited, &st.safety)
	st.pooled = st.poolRows + st.counterUnits
	st.strategy = holdfast.Strategy(strategy)
	return st, err
}

func (c *Client) level(ctx context.Context, tx *sql.Tx, route string, k holdfast.Key) (*holdfast.Level, error) {
	st, err := c.keyState(ctx, tx, route, k)
	if err != nil {
		return nil, err
	}
	return engine.LevelOf(k, engine.KeyCounts{
		Available: st.available, Held: st.held, Pooled: st.pooled, Safety: st.safety,
		Waited: st.waited, Strategy: st.strategy, PoolCap: st.poolCap,
	}), nil
}

// refillKey tops up k's buffer; tx holds k's lock row, so no other refill or
// adjustment runs on k meanwhile. The amount comes from one statement read
// after the lock (keyState): least(cap - pooled, available - held -
// pooled), where held counts every hold whose units are not back, expired
// and unswept ones included. Whatever commits between that read and the
// insert is a reserve (pooled to held), a claim (held and available down
// together) or a release or sweep that did not get the lock (held down):
// none makes the amount too large. inline counts it as buyer-facing. need
// lets a pool grow past its cap to serve one line larger than the cap.
func (c *Client) refillKey(ctx context.Context, tx *sql.Tx, own bool, route string, k holdfast.Key, inline bool, need int) (int, error) {
	if !own {
		if err := c.requireReadCommitted(ctx, tx, route); err != nil {
			return 0, err
		}
	}
	st, err := c.keyState(ctx, tx, route, k)
	if err != nil {
		return 0, err
	}
	capacity := math.MaxInt32
	if strategyOf(st.strategy).pooled {
		capacity = max(st.poolCap, need)
	}
	add := max(0, min(capacity-st.pooled, st.available-st.safety-st.held-st.pooled)) // never safety stock
	if st.waited {
		add = 0 // units coming back go to the key's waiters first (waitlist.go)
	}
	if add == 0 {
		return 0, nil
	}
	if strategyOf(st.strategy).pooled {
		for left := add; left > 0; left -= refillChunk {
			if _, err := tx.ExecContext(ctx, c.q(ctx, route, "pool_fill"), min(left, refillChunk), k.ShopID, k.ItemID, k.LocationID); err != nil {
				return 0, err
			}
		}
	} else {
		res, err := tx.ExecContext(ctx, c.q(ctx, route, "counter_add"), add, k.ShopID, k.ItemID, k.LocationID)
		if err != nil {
			return 0, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := tx.ExecContext(ctx, c.q(ctx, route, "counter_create"), k.ShopID, k.ItemID, k.LocationID, add); err != nil {
				return 0, err
			}
		}
	}
	c.cfg.Observer.Replenished(k, inline, add)
	return add, nil
}

// ProbeConnWait bounds how long the isolation check of a …Tx call waits for
// its one connection besides the caller's transaction (requireReadCommitted).
const ProbeConnWait = 2 * time.Second

// requireReadCommitted refuses to refill inside a caller's transaction that
// reads from a snapshot (REPEATABLE READ, MySQL's default): the refill's read
// would come from the transaction's old snapshot, not the state after the
// lock, and could over-fill the buffer. It bumps a probe row outside the
// transaction and reads it inside: READ COMMITTED sees the bump.
//
// The bump is the one statement holdfast runs on a second connection while
// a transaction is open: MariaDB offers no in-connection read of a running
// transaction's isolation (@@tx_isolation is the session's level, not SET
// TRANSACTION's). So that a pool exactly as large as its callers'
// transactions cannot wedge on it, the bump waits at most ProbeConnWait for
// a connection and then answers ErrUnavailable saying so, never a hang.
func (c *Client) requireReadCommitted(ctx context.Context, tx *sql.Tx, route string) error {
	pctx, cancel := context.WithTimeout(ctx, ProbeConnWait)
	defer cancel()
	res, err := c.db.ExecContext(pctx, c.q(ctx, route, "probe_bump"))
	if err != nil {
		if ctx.Err() == nil && pctx.Err() != nil {
			return fmt.Errorf("%w: the isolation check of a …Tx call needs one pool connection besides the caller's transaction and none was free for %s: give the pool more connections than concurrent caller transactions", holdfast.ErrUnavailable, ProbeConnWait)
		}
		return err
	}
	bumped, err := res.LastInsertId()
	if err != nil {
		return err
	}
	var seen int64
	if err := tx.QueryRowContext(ctx, c.q(ctx, route, "probe_read")).Scan(&seen); err != nil {
		return err
	}
	if seen < bumped {
		return holdfast.NewArgumentError("tx", "the caller's transaction reads from a snapshot (REPEATABLE READ?); holdfast's …Tx operations need READ COMMITTED: begin it with mysql.TxOptions()")
	}
	return nil
}

// returnUnits refills the buffers of keys whose holds just ended, for the
// keys whose lock row is free right now. It never waits: a key being
// refilled or adjusted by someone else is left to them and the replenisher.
func (c *Client) returnUnits(ctx context.Context, tx *sql.Tx, own bool, route string, keys []holdfast.Key) error {
	for _, k := range keys {
		mine, err := c.exists(ctx, tx, route, "trylock_key", k.ShopID, k.ItemID, k.LocationID)
		if err != nil {
			return err
		}
		if mine {
			if _, err := c.refillKey(ctx, tx, own, route, k, false, 0); err != nil {
				return err
			}
		}
	}
	return nil
}
