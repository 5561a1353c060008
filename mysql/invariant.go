package mysql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/holdfast/holdfast"
)

// checkInvariant is one read of the whole database from one snapshot
// (driver.Checker.ReadInvariant).
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
