package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// ChangeStock sets or moves a key's available stock (see
// holdfast.StockChange), creating the key when it is new, and returns its
// level. An identified change is idempotent on its ID: a retry answers the
// first outcome. A change that would leave active holds above available
// is refused (ErrOverCommitted) unless it is a stocktake (Set), which
// records the over-commitment instead.
func (c *Client[TTx]) ChangeStock(ctx context.Context, ch holdfast.StockChange) (*holdfast.Level, error) {
	var zero TTx
	l, err := c.changeStock(ctx, zero, true, ch)
	if err == nil {
		// A restock may serve waiters, a reduction may leave a wait that
		// can never be served.
		c.endUnservableOn(ctx, holdfast.RouteAdjust, []holdfast.Key{ch.Key})
	}
	return l, err
}

// ChangeStockTx is ChangeStock inside the caller's transaction (in a
// savepoint): the change and its id record commit with the caller's
// transaction.
func (c *Client[TTx]) ChangeStockTx(ctx context.Context, tx TTx, ch holdfast.StockChange) (*holdfast.Level, error) {
	if err := callerTx(tx); err != nil {
		return nil, err
	}
	return c.changeStock(ctx, tx, false, ch)
}

func (c *Client[TTx]) changeStock(ctx context.Context, tx TTx, own bool, ch holdfast.StockChange) (*holdfast.Level, error) {
	start := time.Now()
	if err := validateStockChange(ch); err != nil {
		c.observe(holdfast.RouteAdjust, start, err, nil)
		return nil, err
	}
	if err := c.refuseBundleStock(ctx, tx, own, ch.ShopID, []int64{ch.ItemID}, func(int) string { return "item_id" }); err != nil {
		c.observe(holdfast.RouteAdjust, start, err, nil)
		return nil, err
	}
	var lvl *holdfast.Level
	var changed *holdfast.StockChangedError
	err := c.run(ctx, tx, own, holdfast.RouteAdjust, ch.ID != "", func(tx TTx) error {
		var err error
		changed = nil
		lvl, err = c.d.ChangeStockAttempt(ctx, tx, own, ch)
		if errors.As(err, &changed) && ch.ID != "" {
			// A compare-and-set mismatch changed no stock; what it wrote
			// is an identified change's record of the refusal, which
			// commits so that a retry answers the same.
			return nil
		}
		if err != nil || lvl.Replayed {
			return err // a replay changed nothing: its first outcome was recorded
		}
		if err := c.audit(ctx, tx, ch.ShopID, stockAction(ch), stockDetail(ch, lvl)); err != nil {
			return err
		}
		// Stock that arrived serves owed pre-orders first, oldest first
		// (preorder.go); the answer is the level after them.
		_, lvl, err = c.convertKey(ctx, tx, own, ch.Key, lvl, true)
		return err
	})
	if err == nil && changed != nil {
		err = changed
	}
	if errors.As(err, &changed) {
		changed.Index = -1
	}
	c.observe(holdfast.RouteAdjust, start, err, nil)
	if err != nil {
		return nil, err
	}
	return lvl, nil
}

// SetStrategy sets a key's allocation strategy (and, for pool, its pool
// cap; 0 is Config.PoolCap), creating the key when it is new: under the
// key's lock its buffer is emptied into the new one. A strategy the
// driver does not offer is an *ArgumentError.
func (c *Client[TTx]) SetStrategy(ctx context.Context, k holdfast.Key, s holdfast.Strategy, poolCap int) (*holdfast.Level, error) {
	if err := holdfast.ValidateKey(k); err != nil {
		return nil, err
	}
	if offered := c.d.Strategies(); !slices.Contains(offered, s) {
		return nil, holdfast.NewArgumentError("strategy", "must be %s", strategyNames(offered))
	}
	if poolCap < 0 || poolCap > holdfast.PoolCapLimit {
		return nil, holdfast.NewArgumentError("pool_cap", "must be between 1 and %d (0 for the default)", holdfast.PoolCapLimit)
	}
	var zero TTx
	var lvl *holdfast.Level
	err := c.run(ctx, zero, true, holdfast.RouteAdjust, true, func(tx TTx) error {
		var err error
		lvl, err = c.d.SetStrategyAttempt(ctx, tx, k, s, poolCap)
		if err != nil {
			return err
		}
		return c.audit(ctx, tx, k.ShopID, holdfast.AuditStockStrategy, map[string]any{
			"item_id": k.ItemID, "location_id": k.LocationID, "strategy": s, "pool_cap": poolCap})
	})
	c.d.StrategyChanged(k)
	return lvl, err
}

// strategyNames is "a, b or c".
func strategyNames(offered []holdfast.Strategy) string {
	names := make([]string, len(offered))
	for i, s := range offered {
		names[i] = string(s)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// SetSafetyStock sets a key's safety stock (0 removes it), creating the
// key (available 0) when it is new, and returns its level: the units it
// withholds are never sold (Level.Sellable), and never held in its buffer.
func (c *Client[TTx]) SetSafetyStock(ctx context.Context, k holdfast.Key, safety int) (*holdfast.Level, error) {
	if err := validateSafety(k, safety); err != nil {
		return nil, err
	}
	var zero TTx
	var lvl *holdfast.Level
	err := c.run(ctx, zero, true, holdfast.RouteAdjust, true, func(tx TTx) error {
		var err error
		lvl, err = c.d.SetSafetyAttempt(ctx, tx, k, safety)
		if err != nil {
			return err
		}
		return c.audit(ctx, tx, k.ShopID, holdfast.AuditStockSafety, map[string]any{
			"item_id": k.ItemID, "location_id": k.LocationID, "safety": safety, "available": lvl.Available})
	})
	if err != nil {
		return nil, err
	}
	c.kickWaitlist() // a lower safety stock may serve waiters
	return lvl, nil
}

// Level returns a key's stock: available, held, pooled and sellable.
func (c *Client[TTx]) Level(ctx context.Context, k holdfast.Key) (*holdfast.Level, error) {
	if err := holdfast.ValidateKey(k); err != nil {
		return nil, err
	}
	var zero TTx
	var lvl *holdfast.Level
	err := c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		lvl, err = c.d.ReadLevel(ctx, tx, holdfast.RouteRead, k)
		return err
	})
	return lvl, err
}

// stockAction is a stock change's audit action.
func stockAction(ch holdfast.StockChange) string {
	if ch.Set != nil {
		return holdfast.AuditStockSet
	}
	return holdfast.AuditStockAdjust
}

// stockDetail is a stock change's audit detail: the change as asked and
// the available stock it left.
func stockDetail(ch holdfast.StockChange, l *holdfast.Level) map[string]any {
	d := map[string]any{"item_id": ch.ItemID, "location_id": ch.LocationID, "reason": ch.Reason, "available_after": l.Available}
	if ch.Set != nil {
		d["set"] = *ch.Set
	} else {
		d["delta"] = ch.Delta
	}
	if ch.Reference != "" {
		d["reference"] = ch.Reference
	}
	if ch.ID != "" {
		d["change_id"] = ch.ID
	}
	return d
}

// KeyCounts is one key's state as a driver reads it (key_state.sql on
// both drivers): what LevelOf makes a Level of.
type KeyCounts struct {
	Available, Held, Pooled, Safety int
	// Waited: the key has waiters (units go to them first).
	Waited   bool
	Strategy holdfast.Strategy
	PoolCap  int
}

// LevelOf is k's Level with counts n: what a new buyer could take is the
// verdict of every reserve path (Sellable: available less safety stock
// less holds, never below zero, nothing while the key has waiters); the
// key is over-committed when its holds exceed its available stock.
func LevelOf(k holdfast.Key, n KeyCounts) *holdfast.Level {
	return &holdfast.Level{
		Key: k, Available: n.Available, Held: n.Held, Pooled: n.Pooled,
		Sellable:      Sellable(driver.KeyAvailability{Free: n.Available - n.Safety, Held: n.Held, Waiters: n.Waited}),
		OverCommitted: n.Held > n.Available, Safety: n.Safety,
		Strategy: n.Strategy, PoolCap: n.PoolCap,
	}
}
