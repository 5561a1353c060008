package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// ReadAvailability is the availability read (availability.sql): one
// statement on the pool, outside any transaction, so one snapshot and no
// locks, sent in one round trip after availability_generic.sql, which has
// it use its cached generic plan instead of planning it per call.
func (d *engineDriver) ReadAvailability(ctx context.Context, shop int64, items, locations []int64) ([]driver.KeyAvailability, error) {
	c := d.c()
	b := &pgx.Batch{}
	b.Queue(c.q(ctx, holdfast.RouteRead, "availability_generic"))
	b.Queue(c.q(ctx, holdfast.RouteRead, "availability"), shop, items, locations)
	br := c.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	rows, err := br.Query()
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
