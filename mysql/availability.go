package mysql

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// ReadAvailability is the availability read: one statement on the pool,
// outside any transaction, so one consistent read and no locks —
// availability.sql over the query's locations, availability_order.sql
// over the shop's order.
func (d *engineDriver) ReadAvailability(ctx context.Context, shop int64, items, locations []int64) ([]hfdriver.KeyAvailability, error) {
	c := d.c()
	if locations == nil {
		locations = []int64{}
	}
	itemsJSON, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	locsJSON, err := json.Marshal(locations)
	if err != nil {
		return nil, err
	}
	var rows *sql.Rows
	if len(locations) > 0 {
		rows, err = c.db.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "availability"), shop, string(itemsJSON), string(locsJSON))
	} else {
		rows, err = c.db.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "availability_order"), string(itemsJSON), shop)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]hfdriver.KeyAvailability, 0, len(items)*max(1, len(locations)))
	for rows.Next() {
		var k hfdriver.KeyAvailability
		if err := rows.Scan(&k.ItemID, &k.LocationID, &k.Free, &k.Held, &k.Waiters, &k.Stocked, &k.Preorder); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
