package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/jackc/pgx/v5"
)

// Adjust changes a key's available stock by delta (restock, shrinkage) and
// records reason and reference in the audit trail: ChangeStock without an
// id. See SetAvailable.
func (c *Client) Adjust(ctx context.Context, k holdfast.Key, delta int, reason, reference string) (*holdfast.Level, error) {
	return c.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: delta, Reason: reason, Reference: reference})
}

// AdjustTx is Adjust inside the caller's transaction (in a savepoint).
func (c *Client) AdjustTx(ctx context.Context, tx pgx.Tx, k holdfast.Key, delta int, reason, reference string) (*holdfast.Level, error) {
	return c.ChangeStockTx(ctx, tx, holdfast.StockChange{Key: k, Delta: delta, Reason: reason, Reference: reference})
}

// SetAvailable sets a key's available stock (a stocktake), creating the key
// when it is new, and records the difference in the audit trail:
// ChangeStock without an id. See ChangeStock.
func (c *Client) SetAvailable(ctx context.Context, k holdfast.Key, available int, reason, reference string) (*holdfast.Level, error) {
	return c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &available, Reason: reason, Reference: reference})
}

// SetAvailableTx is SetAvailable inside the caller's transaction.
func (c *Client) SetAvailableTx(ctx context.Context, tx pgx.Tx, k holdfast.Key, available int, reason, reference string) (*holdfast.Level, error) {
	return c.ChangeStockTx(ctx, tx, holdfast.StockChange{Key: k, Set: &available, Reason: reason, Reference: reference})
}

// changeStockOnce is one attempt (driver.Stocker.ChangeStockAttempt). An
// identified change records its id first — before the key's lock, as a reservation creates its hold row
// before anything else it locks is touched by a concurrent retry — and its
// outcome last.
func (c *Client) changeStockOnce(ctx context.Context, tx pgx.Tx, ch holdfast.StockChange) (*holdfast.Level, error) {
	k := ch.Key
	var set, delta any
	if ch.Set != nil {
		set = *ch.Set
	} else {
		delta = ch.Delta
	}
	var ref any
	if ch.Reference != "" {
		ref = ch.Reference
	}
	if ch.ID != "" {
		var fresh bool
		err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteAdjust, "stock_change_record"), k.ShopID, ch.ID, k.ItemID, k.LocationID, set, delta, ch.Reason, ref, c.now()).Scan(&fresh)
		if errors.Is(err, pgx.ErrNoRows) {
			return c.stockChangeReplay(ctx, tx, ch)
		}
		if err != nil {
			return nil, err
		}
	}
	// Lock order: the key's lock, then its buffers (shrink), then its
	// level row (level_lock) — never the level row before the buffers, or
	// a caller's transaction that holds a buffer row (ReserveTx) and then
	// claims (the level row) would deadlock with this change.
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "lock_key"), keyHash(k)); err != nil {
		return nil, err
	}
	st, err := c.keyState(ctx, tx, holdfast.RouteAdjust, k)
	if err != nil {
		return nil, err
	}
	if ch.ExpectAvailable != nil && *ch.ExpectAvailable != st.available {
		// Read under the key's lock: true when read (claims may lower it
		// since, which only the level row's lock below stops).
		return nil, c.stockChanged(ctx, tx, ch, st.available)
	}
	next := st.available + ch.Delta
	if ch.Set != nil {
		next = *ch.Set
	}
	if err := checkNext(st.available, next, ch.Delta); err != nil {
		return nil, err
	}
	// Shrink to the new level before it is written. Claims meanwhile lower
	// available and held alike, so the buffer is never left too big; at
	// worst it is smaller than it could be, and a refill tops it up.
	if err := c.shrink(ctx, tx, holdfast.RouteAdjust, k, false, next-st.available); err != nil {
		return nil, err
	}
	if ch.ExpectAvailable != nil {
		if cur, err := c.casCheck(ctx, tx, k, *ch.ExpectAvailable); err != nil || cur != *ch.ExpectAvailable {
			if err != nil {
				return nil, err
			}
			// A claim lowered it meanwhile: give the buffer back what
			// shrink took, and change nothing else.
			if _, err := c.refill(ctx, tx, holdfast.RouteAdjust, []holdfast.Key{k}); err != nil {
				return nil, err
			}
			return nil, c.stockChanged(ctx, tx, ch, cur)
		}
	}
	var old int
	if err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteAdjust, "level_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&old); err != nil {
		return nil, err
	}
	next = old + ch.Delta
	if ch.Set != nil {
		next = *ch.Set
	}
	if err := checkNext(old, next, ch.Delta); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "level_set"), k.ShopID, k.ItemID, k.LocationID, next, next-old, ch.Reason, ref); err != nil {
		return nil, err
	}
	// A wait the change leaves asking more than could ever be sold ends
	// now, before the refill and the answer: the answer is the level
	// without it (waitlist.go).
	if _, err := c.endUnservable(ctx, tx, []holdfast.Key{k}, map[holdfast.Key]bool{k: true}); err != nil {
		return nil, err
	}
	if _, err := c.refill(ctx, tx, holdfast.RouteAdjust, []holdfast.Key{k}); err != nil {
		return nil, err
	}
	lvl, err := c.level(ctx, tx, holdfast.RouteAdjust, k)
	if err != nil || ch.ID == "" {
		return lvl, err
	}
	raw, err := json.Marshal(changeOutcome{Level: *lvl, ExpectAvailable: ch.ExpectAvailable})
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "stock_change_done"), k.ShopID, ch.ID, string(raw)); err != nil {
		return nil, err
	}
	return lvl, nil
}

func checkNext(old, next, delta int) error {
	if next < 0 {
		return holdfast.NewArgumentError("delta", "would take available below zero (available %d, delta %d)", old, delta)
	}
	if next > holdfast.AvailableMax {
		return holdfast.NewArgumentError("delta", "would take available above %d", holdfast.AvailableMax)
	}
	return nil
}

// stockChangeReplay answers a stock change whose id is already recorded:
// the recorded level when it is the same change, else
// ErrIdempotencyConflict.
func (c *Client) stockChangeReplay(ctx context.Context, tx pgx.Tx, ch holdfast.StockChange) (*holdfast.Level, error) {
	var item, loc int64
	var set, delta *int
	var reason, ref string
	var raw []byte
	err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteAdjust, "stock_change_get"), ch.ShopID, ch.ID).Scan(&item, &loc, &set, &delta, &reason, &ref, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		// Purged between the insert and this read: run again.
		return nil, errRetry
	}
	if err != nil {
		return nil, err
	}
	same := item == ch.ItemID && loc == ch.LocationID && reason == ch.Reason && ref == ch.Reference
	if ch.Set != nil {
		same = same && set != nil && *set == *ch.Set
	} else {
		same = same && set == nil && delta != nil && *delta == ch.Delta
	}
	var out changeOutcome
	if same && raw != nil {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, err
		}
		same = equalPtr(out.ExpectAvailable, ch.ExpectAvailable)
	}
	if !same {
		return nil, fmt.Errorf("%w: stock change id %q was used for another change", holdfast.ErrIdempotencyConflict, ch.ID)
	}
	if raw == nil {
		// Recorded but not finished: only possible inside the caller's
		// own transaction, which already applied it.
		return nil, fmt.Errorf("%w: stock change id %q used twice in one transaction", holdfast.ErrIdempotencyConflict, ch.ID)
	}
	if out.Changed != nil {
		return nil, &holdfast.StockChangedError{Key: ch.Key, Expected: out.Changed.Expected, Current: out.Changed.Current, Index: -1}
	}
	lvl := &out.Level
	lvl.Key = ch.Key
	lvl.Replayed = true
	return lvl, nil
}

// changeOutcome is an identified stock change's recorded outcome
// (stock_changes.outcome): the level it answered, or the compare-and-set
// refusal it answered (Changed), and the expectation it was sent with
// (part of what its id stands for).
type changeOutcome struct {
	holdfast.Level
	ExpectAvailable *int            `json:"expect_available,omitempty"`
	Changed         *changedOutcome `json:"stock_changed,omitempty"`
}

type changedOutcome struct {
	Expected int `json:"expected"`
	Current  int `json:"current"`
}

func equalPtr(a, b *int) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// casCheck locks k's level row (after the key's lock and its buffers: the
// lock order) and answers its available, 0 when the key was never stocked
// — without creating it: from here until commit no claim can move it.
func (c *Client) casCheck(ctx context.Context, tx pgx.Tx, k holdfast.Key, expect int) (int, error) {
	var cur int
	err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteAdjust, "level_peek_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&cur)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return cur, err
}

// stockChanged is a compare-and-set refusal: recorded as an identified
// change's outcome (the engine commits it; nothing else was written), and
// answered.
func (c *Client) stockChanged(ctx context.Context, tx pgx.Tx, ch holdfast.StockChange, cur int) error {
	e := &holdfast.StockChangedError{Key: ch.Key, Expected: *ch.ExpectAvailable, Current: cur, Index: -1}
	if ch.ID == "" {
		return e
	}
	raw, err := json.Marshal(changeOutcome{Level: holdfast.Level{Key: ch.Key}, ExpectAvailable: ch.ExpectAvailable, Changed: &changedOutcome{Expected: e.Expected, Current: cur}})
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "stock_change_done"), ch.ShopID, ch.ID, string(raw)); err != nil {
		return err
	}
	return e
}

// shrinkRoundsMax bounds shrink's loop; each round can only be cut short by
// reservers that commit meanwhile, which shrinks the excess too.
const shrinkRoundsMax = 1000

// shrink removes units from a key's buffers, under the key's advisory lock,
// until pooled + held <= available + change (or the buffers are empty: the
// key is over-committed), change being a change of available about to be
// written. With all set it empties the buffers.
func (c *Client) shrink(ctx context.Context, tx pgx.Tx, route string, k holdfast.Key, all bool, change int) error {
	for range shrinkRoundsMax {
		st, err := c.keyState(ctx, tx, route, k)
		if err != nil {
			return err
		}
		excess := st.pooled
		if !all {
			// The buffer never holds units of the safety stock.
			excess = min(st.pooled, st.pooled+st.held-(st.available-st.safety+change))
		}
		if excess <= 0 {
			return nil
		}
		var got int
		if st.poolRows > 0 {
			if err := tx.QueryRow(ctx, c.q(ctx, route, "shrink_pool"), k.ShopID, k.ItemID, k.LocationID, min(excess, st.poolRows)).Scan(&got); err != nil {
				return err
			}
			excess -= got
		}
		if excess > 0 && st.counterUnits > 0 {
			if _, err := c.gather(ctx, tx, route, k, min(excess, st.counterUnits), false); err != nil {
				return err
			}
		}
	}
	return errors.New("holdfast: shrink did not converge")
}

// setStrategyOnce is one attempt of SetStrategy (driver.Stocker): under
// the key's lock, buffers before the level row (lock order).
func (c *Client) setStrategyOnce(ctx context.Context, tx pgx.Tx, k holdfast.Key, s holdfast.Strategy, poolCap int) (*holdfast.Level, error) {
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "lock_key"), keyHash(k)); err != nil {
		return nil, err
	}
	var cp any
	if poolCap > 0 {
		cp = poolCap
	}
	if err := c.shrink(ctx, tx, holdfast.RouteAdjust, k, true, 0); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "set_strategy"), k.ShopID, k.ItemID, k.LocationID, string(s), cp); err != nil {
		return nil, err
	}
	if _, err := c.refill(ctx, tx, holdfast.RouteAdjust, []holdfast.Key{k}); err != nil {
		return nil, err
	}
	return c.level(ctx, tx, holdfast.RouteAdjust, k)
}

type keyState struct {
	exists                  bool
	available, held, pooled int
	poolRows, counterUnits  int
	strategy                holdfast.Strategy
	poolCap                 int
	safety                  int  // units withheld from sale (safety stock)
	waited                  bool // the key has waiters (waitlist.go)
}

func (c *Client) keyState(ctx context.Context, tx pgx.Tx, route string, k holdfast.Key) (keyState, error) {
	var st keyState
	var strategy string
	err := tx.QueryRow(ctx, c.q(ctx, route, "key_state"), k.ShopID, k.ItemID, k.LocationID, string(c.cfg.Strategy), c.cfg.PoolCap).
		Scan(&st.exists, &st.available, &st.held, &st.poolRows, &st.counterUnits, &strategy, &st.poolCap, &st.safety, &st.waited)
	st.pooled = st.poolRows + st.counterUnits
	st.strategy = holdfast.Strategy(strategy)
	return st, err
}

func (c *Client) level(ctx context.Context, tx pgx.Tx, route string, k holdfast.Key) (*holdfast.Level, error) {
	st, err := c.keyState(ctx, tx, route, k)
	if err != nil {
		return nil, err
	}
	return engine.LevelOf(k, engine.KeyCounts{
		Available: st.available, Held: st.held, Pooled: st.pooled, Safety: st.safety,
		Waited: st.waited, Strategy: st.strategy, PoolCap: st.poolCap,
	}), nil
}

type refillResult struct {
	key                     holdfast.Key
	added                   int
	available, held, pooled int
}

// refill tops up the buffers of keys whose advisory locks tx holds, in one
// statement (see sql/refill.sql for why one).
func (c *Client) refill(ctx context.Context, tx pgx.Tx, route string, keys []holdfast.Key) ([]refillResult, error) {
	shops := make([]int64, len(keys))
	items := make([]int64, len(keys))
	locs := make([]int64, len(keys))
	for i, k := range keys {
		shops[i], items[i], locs[i] = k.ShopID, k.ItemID, k.LocationID
	}
	rows, err := tx.Query(ctx, c.q(ctx, route, "refill"), shops, items, locs, string(c.cfg.Strategy), c.cfg.PoolCap, c.cfg.Slots, batchStripes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []refillResult
	for rows.Next() {
		var r refillResult
		var avail, held, pooled int64
		if err := rows.Scan(&r.key.ShopID, &r.key.ItemID, &r.key.LocationID, &r.added, &avail, &held, &pooled); err != nil {
			return nil, err
		}
		r.available, r.held, r.pooled = int(avail), int(held), int(pooled)
		out = append(out, r)
	}
	return out, rows.Err()
}

// gather takes q units across every slot of a counter or slotted key,
// waiting for the slot locks (in slot order): all or nothing when whole is
// set, else as many as there are. Used under the key's advisory lock, by a
// reservation's slow path and to shrink a buffer. Returns the units taken.
func (c *Client) gather(ctx context.Context, tx pgx.Tx, route string, k holdfast.Key, q int, whole bool) (int, error) {
	rows, err := tx.Query(ctx, c.q(ctx, route, "slots_lock"), k.ShopID, k.ItemID, k.LocationID)
	if err != nil {
		return 0, err
	}
	var slots, takes []int32
	taken := 0
	for rows.Next() {
		var slot, units int32
		if err := rows.Scan(&slot, &units); err != nil {
			return 0, err
		}
		if t := min(int(units), q-taken); t > 0 {
			slots, takes = append(slots, slot), append(takes, int32(t))
			taken += t
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if taken == 0 || (whole && taken < q) {
		return 0, nil
	}
	_, err = tx.Exec(ctx, c.q(ctx, route, "slots_take"), k.ShopID, k.ItemID, k.LocationID, slots, takes)
	return taken, err
}
