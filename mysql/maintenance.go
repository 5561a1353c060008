package mysql

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// sweepAttempt expires at most limit holds past their expiry and gives
// their units back to their keys' buffers where the key's lock row is free
// (driver.Maintainer.SweepAttempt).
func (c *Client) sweepAttempt(ctx context.Context, tx *sql.Tx, limit int) (int, error) {
	const route = holdfast.RouteSweep
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "sweep_pick"), c.now(), limit)
	if err != nil {
		return 0, err
	}
	var picked [][2]any
	for rows.Next() {
		var shop int64
		var id []byte
		if err := rows.Scan(&shop, &id); err != nil {
			rows.Close()
			return 0, err
		}
		picked = append(picked, [2]any{shop, hex.EncodeToString(id)})
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(picked) == 0 {
		return 0, nil
	}
	raw, _ := json.Marshal(picked)
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "sweep_expire"), string(raw), c.now())
	if err != nil {
		return 0, err
	}
	expired, _ := res.RowsAffected()
	rows, err = tx.QueryContext(ctx, c.q(ctx, route, "sweep_keys"), string(raw))
	if err != nil {
		return 0, err
	}
	var keys []holdfast.Key
	for rows.Next() {
		var k holdfast.Key
		if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID); err != nil {
			rows.Close()
			return 0, err
		}
		keys = append(keys, k)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "sweep_lines"), string(raw)); err != nil {
		return 0, err
	}
	return int(expired), c.returnUnits(ctx, tx, true, route, keys)
}

// purgeAttempt deletes at most limit each of outcome records (holds and
// stock changes) and ended waits older than Config.OutcomeRetention, and of
// buyer lock rows of buyers with no hold left on record (purgeBuyerLocks),
// and answers the largest count (driver.Maintainer.PurgeAttempt).
func (c *Client) purgeAttempt(ctx context.Context, tx *sql.Tx, limit int) (int, error) {
	const route = holdfast.RoutePurge
	n := 0
	for _, stmt := range []string{"purge_outcomes", "purge_changes", "waitlist_purge"} {
		res, err := tx.ExecContext(ctx, c.q(ctx, route, stmt), c.now(), c.cfg.OutcomeRetention.Microseconds(), limit)
		if err != nil {
			return 0, err
		}
		m, _ := res.RowsAffected()
		n = max(n, int(m))
	}
	m, err := c.purgeBuyerLocks(ctx, tx, limit)
	if err != nil {
		return 0, err
	}
	return max(n, m), nil
}

// purgeBuyerLocks deletes one batch (at most Config.SweepBatch) of the
// buyer_locks rows (buyer.go) of buyers with no hold of the shop left on
// record, after the outcome purge in tx. A row a transaction holds is
// skipped, never waited for, so it cannot vanish under the transaction
// that relies on it; one deleted while nobody holds it is created again by
// the buyer's next reservation.
func (c *Client) purgeBuyerLocks(ctx context.Context, tx *sql.Tx, limit int) (int, error) {
	const route = holdfast.RoutePurge
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "buyer_locks_pick"), limit)
	if err != nil {
		return 0, err
	}
	var picked [][3]any
	for rows.Next() {
		var shop, item int64
		var hash string
		if err := rows.Scan(&shop, &item, &hash); err != nil {
			rows.Close()
			return 0, err
		}
		picked = append(picked, [3]any{shop, item, hash})
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil || len(picked) == 0 {
		return 0, err
	}
	raw, _ := json.Marshal(picked)
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "buyer_locks_delete"), string(raw))
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ReplenishBatch bounds the keys one replenisher transaction examines.
const ReplenishBatch = engine.ReplenishBatch

// replenishAttempt examines at most limit keys after after and refills
// the buffers that can and should grow (pool keys below the low-water
// mark, counter keys with unallocated stock), skipping keys whose lock row
// another transaction holds (driver.Maintainer.ReplenishAttempt).
func (c *Client) replenishAttempt(ctx context.Context, tx *sql.Tx, after holdfast.Key, limit int) (examined int, last holdfast.Key, added int, err error) {
	const route = holdfast.RouteReplenish
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "replenish_scan"),
		c.cfg.LowWaterPercent, string(c.cfg.Strategy), c.cfg.PoolCap,
		after.ShopID, after.ItemID, after.LocationID, limit)
	if err != nil {
		return 0, last, 0, err
	}
	var wanted []holdfast.Key
	for rows.Next() {
		var k holdfast.Key
		var want bool
		if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &want); err != nil {
			rows.Close()
			return 0, last, 0, err
		}
		examined++
		last = k
		if want {
			wanted = append(wanted, k)
		}
	}
	if err := rows.Close(); err != nil {
		return 0, last, 0, err
	}
	for _, k := range wanted {
		mine, err := c.exists(ctx, tx, route, "trylock_key", k.ShopID, k.ItemID, k.LocationID)
		if err != nil {
			return 0, last, 0, err
		}
		if !mine {
			continue
		}
		n, err := c.refillKey(ctx, tx, true, route, k, false, 0)
		if err != nil {
			return 0, last, 0, err
		}
		added += n
	}
	return examined, last, added, nil
}
