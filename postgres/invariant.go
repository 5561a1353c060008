package postgres

import (
	"context"
	"fmt"
	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/jackc/pgx/v5"
)

// checkInvariant is one read of the whole database from one snapshot
// (driver.Checker.ReadInvariant).
func (c *Client) checkInvariant(ctx context.Context) (*holdfast.InvariantReport, error) {
	rep := &holdfast.InvariantReport{}
	err := pgx.BeginTxFunc(ctx, c.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL jit = off"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "invariant"))
		if err != nil {
			return err
		}
		accts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (holdfast.KeyAccount, error) {
			var a holdfast.KeyAccount
			err := row.Scan(&a.ShopID, &a.ItemID, &a.LocationID, &a.Available, &a.Held, &a.Pooled, &a.LedgerSum, &a.Safety)
			return a, err
		})
		if err != nil {
			return err
		}
		rep.Keys = len(accts)
		for _, a := range accts {
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
		rows, err = tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "invariant_held_counts"))
		if err != nil {
			return err
		}
		for rows.Next() {
			var k holdfast.Key
			var lines, counted int64
			if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &lines, &counted); err != nil {
				return err
			}
			rep.Defects = append(rep.Defects, fmt.Sprintf("held count differs from lines: %+v lines %d counted %d", k, lines, counted))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "invariant_holds"))
		if err != nil {
			return err
		}
		for rows.Next() {
			var problem string
			var id uuid.UUID
			if err := rows.Scan(&problem, &id); err != nil {
				return err
			}
			rep.Defects = append(rep.Defects, problem+": "+id.String())
		}
		return rows.Err()
	})
	return rep, err
}
