package holdfast

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Safety stock (issue #16 item 4): a per-key quantity withheld from sale.
// Sellable is available - safety - held; buffers (pool rows, counters) never
// hold units that would eat into it, so every strategy, the combiner and
// the replenisher respect it without knowing it. Claims and stock changes
// behave as before: a claim deducts its hold from available, a stock change
// moves available (and shrinks the buffer to fit the safety stock too).
//
// Raising the safety stock above what is free (available - held) is
// allowed, like a stock reduction below the active holds: the buffer is
// emptied, nothing more is sold, and every hold stays claimable (holds are
// backed by available, which the safety stock does not reduce). CheckInvariant
// keeps checking pooled + held <= available, and also that a non-empty
// buffer never reaches into the safety stock: pooled + held <= available -
// safety whenever pooled > 0.

// SafetyRespected reports whether a key's buffer stays out of its safety
// stock: an empty buffer, or pooled + held <= available - safety.
// CheckInvariant on every engine counts a key that fails it as a violation.
func SafetyRespected(a KeyAccount) bool {
	return a.Safety == 0 || a.Pooled == 0 || a.Pooled+a.Held <= a.Available-a.Safety
}

// ValidateSafety checks SetSafetyStock's arguments. Every engine uses it.
func ValidateSafety(k Key, safety int) error {
	if err := ValidateKey(k); err != nil {
		return err
	}
	if safety < 0 || safety > AvailableMax {
		return NewArgumentError("safety", "must be between 0 and %d", AvailableMax)
	}
	return nil
}

// SetSafetyStock sets a key's safety stock (0 removes it), creating the key
// (available 0) when it is new, and returns its level. Under the key's lock
// it shrinks the buffer first so it never holds safety units, then writes
// the safety stock, then refills (a lowered safety stock is sellable at
// once). Safe for concurrent use.
func (c *Client) SetSafetyStock(ctx context.Context, k Key, safety int) (*Level, error) {
	if err := ValidateSafety(k, safety); err != nil {
		return nil, err
	}
	var lvl *Level
	err := c.run(ctx, c.pool, RouteAdjust, true, true, func(tx pgx.Tx, _ int) error {
		if _, err := tx.Exec(ctx, c.q(ctx, RouteAdjust, "lock_key"), keyHash(k)); err != nil {
			return err
		}
		st, err := c.keyState(ctx, tx, RouteAdjust, k)
		if err != nil {
			return err
		}
		// Buffers before the level row (lock order). shrink counts the
		// current safety stock; the change makes it count the new one.
		if err := c.shrink(ctx, tx, RouteAdjust, k, false, st.safety-safety); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, c.q(ctx, RouteAdjust, "safety_set"), k.ShopID, k.ItemID, k.LocationID, safety); err != nil {
			return err
		}
		if _, err := c.refill(ctx, tx, RouteAdjust, []Key{k}); err != nil {
			return err
		}
		lvl, err = c.level(ctx, tx, RouteAdjust, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	return lvl, nil
}
