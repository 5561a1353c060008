package postgres

import (
	"context"
	"fmt"
	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/jackc/pgx/v5"
)

// CheckInvariant checks the whole database, from one snapshot, for the
// invariant holdfast guarantees: for every key, pooled + held <= available
// (or, after a stock reduction, an empty buffer), the audit trail sums to
// available, and holds and their lines agree. Tests run it after every
// concurrent test; operators can run it through `holdfast doctor`.
func (c *Client) CheckInvariant(ctx context.Context) (*holdfast.InvariantReport, error) {
	// The engine's one retry policy (engine.Retrier). Its transaction begins on
	// its own terms: one REPEATABLE READ snapshot, read only, and no
	// statement timeout, since it reads every key.
	r := c.core.NewRetrier(holdfast.RouteRead)
	for {
		rep, err := c.checkInvariant(ctx)
		// A read: after a lost connection (a pooled connection a server
		// restart closed) it simply runs again.
		if err == nil {
			return rep, nil
		}
		if again, berr := r.Again(ctx, err, connectionLost(err) || retryable(err)); !again {
			if berr != nil {
				return nil, berr
			}
			return rep, err
		}
	}
}

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
