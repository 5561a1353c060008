package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
)

// markNotStocked sets Shortfall.NotStocked on the lines of a short answer
// whose keys never had stock set, so that a mistyped id does not read as a
// sell-out (holdfast.ErrNotStocked). It reads after the attempt, on the
// failure path only and only for lines with nothing sellable; when the read
// fails the answer stays the plain shortfall.
//
// q is the pool, or the caller's transaction for ReserveTx (its savepoint
// is rolled back by then, so the transaction is usable, and a read there
// needs no second connection from a pool the caller may be holding).
func (c *Client) markNotStocked(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, shop int64, err error) error {
	var ise *holdfast.InsufficientStockError
	if !errors.As(err, &ise) {
		return err
	}
	var items, locs []int64
	var idx []int
	for i, l := range ise.Lines {
		if l.Sellable == 0 {
			items, locs, idx = append(items, l.ItemID), append(locs, l.LocationID), append(idx, i)
		}
	}
	if len(idx) == 0 {
		return err
	}
	rows, qerr := q.Query(ctx, c.q(ctx, holdfast.RouteReserve, "not_stocked"), shop, items, locs)
	if qerr != nil {
		return err
	}
	defer rows.Close()
	marks := make([]bool, 0, len(idx))
	for rows.Next() {
		var none bool
		if rows.Scan(&none) != nil {
			return err
		}
		marks = append(marks, none)
	}
	if rows.Err() != nil || len(marks) != len(idx) {
		return err
	}
	for j, i := range idx {
		ise.Lines[i].NotStocked = marks[j]
	}
	return err
}
