package holdfast

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// KeyAccount is one key's accounting as CheckInvariant saw it.
type KeyAccount struct {
	Key
	Available int64 `json:"available"`
	Held      int64 `json:"held"`
	Pooled    int64 `json:"pooled"`
	LedgerSum int64 `json:"ledger_sum"`
	Safety    int64 `json:"safety,omitempty"`
}

// InvariantReport is the result of CheckInvariant.
type InvariantReport struct {
	Keys int `json:"keys"`
	// Violations are keys with pooled + held > available that are not
	// merely over-committed, or whose audit trail does not sum to available.
	Violations []KeyAccount `json:"violations"`
	// OverCommitted are keys whose holds alone exceed available after a
	// stock reduction, with an empty buffer (allowed; nothing more is
	// reserved on them).
	OverCommitted []KeyAccount `json:"over_committed"`
	// Defects are structural: hold lines without a held checkout, held
	// checkouts whose lines differ from their record, keys whose held
	// counts (held_counts) differ from their lines.
	Defects []string `json:"defects"`
}

// OK reports whether the database satisfies the invariant (over-committed
// keys allowed).
func (r *InvariantReport) OK() bool { return len(r.Violations) == 0 && len(r.Defects) == 0 }

func (r *InvariantReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d keys, %d violations, %d over-committed, %d defects", r.Keys, len(r.Violations), len(r.OverCommitted), len(r.Defects))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "\n  violation %+v", v)
	}
	for _, d := range r.Defects {
		fmt.Fprintf(&b, "\n  defect %s", d)
	}
	return b.String()
}

// CheckInvariant checks the whole database, from one snapshot, for the
// invariant holdfast guarantees: for every key, pooled + held <= available
// (or, after a stock reduction, an empty buffer), the audit trail sums to
// available, and holds and their lines agree. Tests run it after every
// concurrent test; operators can run it through `holdfast doctor`.
func (c *Client) CheckInvariant(ctx context.Context) (*InvariantReport, error) {
	// The engine's one retry policy (retrier). Its transaction begins on
	// its own terms: one REPEATABLE READ snapshot, read only, and no
	// statement timeout, since it reads every key.
	r := retrier{c: c, route: RouteRead}
	for {
		rep, err := c.checkInvariant(ctx)
		// A read: after a lost connection (a pooled connection a server
		// restart closed) it simply runs again.
		if err == nil {
			return rep, nil
		}
		if again, berr := r.again(ctx, err, connectionLost(err) || retryable(err)); !again {
			if berr != nil {
				return nil, berr
			}
			return rep, err
		}
	}
}

func (c *Client) checkInvariant(ctx context.Context) (*InvariantReport, error) {
	rep := &InvariantReport{}
	err := pgx.BeginTxFunc(ctx, c.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL jit = off"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, c.q(ctx, RouteRead, "invariant"))
		if err != nil {
			return err
		}
		accts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (KeyAccount, error) {
			var a KeyAccount
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
			case !SafetyRespected(a):
				rep.Violations = append(rep.Violations, a)
			case a.Pooled+a.Held <= a.Available:
			case a.Pooled == 0 && a.Held > a.Available:
				rep.OverCommitted = append(rep.OverCommitted, a)
			default:
				rep.Violations = append(rep.Violations, a)
			}
		}
		rows, err = tx.Query(ctx, c.q(ctx, RouteRead, "invariant_held_counts"))
		if err != nil {
			return err
		}
		for rows.Next() {
			var k Key
			var lines, counted int64
			if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &lines, &counted); err != nil {
				return err
			}
			rep.Defects = append(rep.Defects, fmt.Sprintf("held count differs from lines: %+v lines %d counted %d", k, lines, counted))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, c.q(ctx, RouteRead, "invariant_holds"))
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
