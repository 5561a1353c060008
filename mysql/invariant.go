package mysql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// CheckInvariant checks the whole database, from one snapshot (a read-only
// REPEATABLE READ transaction), for the invariant holdfast guarantees: for
// every key, pooled + held <= available (or, after a stock reduction, an
// empty buffer), the audit trail sums to available, and holds and their
// lines agree. Tests run it after every concurrent test.
func (c *Client) CheckInvariant(ctx context.Context) (*holdfast.InvariantReport, error) {
	for attempt := 0; ; attempt++ {
		rep, err := c.checkInvariant(ctx)
		if err == nil || !(connectionLost(err) || retryable(err)) || attempt >= c.cfg.RetryMax || ctx.Err() != nil {
			return rep, err
		}
		if err := engine.Backoff(ctx, attempt+1); err != nil {
			return nil, err
		}
	}
}

func (c *Client) checkInvariant(ctx context.Context) (*holdfast.InvariantReport, error) {
	const route = holdfast.RouteRead
	tx, err := c.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck
	rep := &holdfast.InvariantReport{}
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "invariant"))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var a holdfast.KeyAccount
		if err := rows.Scan(&a.ShopID, &a.ItemID, &a.LocationID, &a.Available, &a.Held, &a.Pooled, &a.LedgerSum, &a.Safety); err != nil {
			rows.Close()
			return nil, err
		}
		rep.Keys++
		switch {
		case a.LedgerSum != a.Available:
			rep.Violations = append(rep.Violations, a)
		case !holdfast.SafetyRespected(a):
			rep.Violations = append(rep.Violations, a)
		case a.Pooled+a.Held <= a.Available:
		case a.Pooled == 0 && a.Held > a.Available:
			rep.OverCommitted = append(rep.OverCommitted, a)
		default:
			rep.Violations = append(rep.Violations, a)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, c.q(ctx, route, "invariant_holds"))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var problem, id string
		var shop int64
		if err := rows.Scan(&problem, &shop, &id); err != nil {
			return nil, err
		}
		rep.Defects = append(rep.Defects, fmt.Sprintf("%s: shop %d checkout %s", problem, shop, id))
	}
	return rep, rows.Err()
}
