package postgres

import (
	"context"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// ReadAvailability is the availability read (availability.sql): one
// statement on the pool, outside any transaction, so one snapshot and no
// locks, in one round trip; it runs its cached generic plan (the SQL says
// how) instead of being planned per call.
func (d *engineDriver) ReadAvailability(ctx context.Context, shop int64, items, locations []int64) ([]driver.KeyAvailability, error) {
	c := d.c()
	rows, err := c.pool.Query(ctx, c.q(ctx, holdfast.RouteRead, "availability"), shop, items, locations)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]driver.KeyAvailability, 0, len(items)*max(1, len(locations)))
	for rows.Next() {
		var k driver.KeyAvailability
		if err := rows.Scan(&k.ItemID, &k.LocationID, &k.Free, &k.Held, &k.Waiters, &k.Stocked, &k.Preorder); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
