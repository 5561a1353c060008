package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/holdfast/holdfast"
)

// markNotStocked sets Shortfall.NotStocked on the lines of a short answer
// whose keys never had stock set, so that a mistyped id does not read as a
// sell-out (holdfast.ErrNotStocked). It reads after the attempt, on the
// failure path only and only for lines with nothing sellable; when the read
// fails the answer stays the plain shortfall.
//
// q is the pool, or the caller's transaction for ReserveTx (left as it
// was by then, so usable, and a read there needs no second connection
// from a pool the caller may be holding).
func (c *Client) markNotStocked(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, shop int64, err error) error {
	var ise *holdfast.InsufficientStockError
	if !errors.As(err, &ise) {
		return err
	}
	type key struct {
		ItemID     int64 `json:"item_id"`
		LocationID int64 `json:"location_id"`
	}
	var keys []key
	var idx []int
	for i, l := range ise.Lines {
		if l.Sellable == 0 {
			keys, idx = append(keys, key{l.ItemID, l.LocationID}), append(idx, i)
		}
	}
	if len(idx) == 0 {
		return err
	}
	raw, jerr := json.Marshal(keys)
	if jerr != nil {
		return err
	}
	rows, qerr := q.QueryContext(ctx, c.q(ctx, holdfast.RouteReserve, "not_stocked"), shop, string(raw))
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
