package mysql

import (
	"context"
	"encoding/json"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// ReadAvailability is the availability read (availability.sql): one
// statement on the pool, outside any transaction, so one consistent read
// and no locks.
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
	rows, err := c.db.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "availability"), shop, string(itemsJSON), string(locsJSON), shop, string(locsJSON))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]hfdriver.KeyAvailability, 0, len(items)*max(1, len(locations)))
	for rows.Next() {
		var k hfdriver.KeyAvailability
		if err := rows.Scan(&k.ItemID, &k.LocationID, &k.Free, &k.Held, &k.Waiters, &k.Stocked); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
