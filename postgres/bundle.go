package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Bundles on PostgreSQL (driver.Bundler): bundle_components and the
// shop's lock row bundle_shops (migration 16).

func (d *engineDriver) LockBundles(ctx context.Context, tx pgx.Tx, shop int64) error {
	c := d.c()
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "bundle_lock"), shop)
	return err
}

func (d *engineDriver) BundleFacts(ctx context.Context, tx pgx.Tx, b holdfast.Bundle) (driver.BundleFacts, error) {
	c := d.c()
	ids, _ := bundleColumns(b)
	var f driver.BundleFacts
	err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteAdjust, "bundle_facts"), b.ShopID, b.ItemID, ids).
		Scan(&f.Stocked, &f.ComponentOf, &f.Nested, &f.Others)
	return f, err
}

func (d *engineDriver) WriteBundle(ctx context.Context, tx pgx.Tx, b holdfast.Bundle) error {
	c := d.c()
	ids, qtys := bundleColumns(b)
	batch := &pgx.Batch{}
	batch.Queue(c.q(ctx, holdfast.RouteAdjust, "bundle_delete"), b.ShopID, b.ItemID)
	batch.Queue(c.q(ctx, holdfast.RouteAdjust, "bundle_insert"), b.ShopID, b.ItemID, ids, qtys)
	return tx.SendBatch(ctx, batch).Close()
}

func (d *engineDriver) GetBundle(ctx context.Context, tx pgx.Tx, shop, item int64) ([]holdfast.BundleComponent, error) {
	c := d.c()
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "bundle_get"), shop, item)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (holdfast.BundleComponent, error) {
		var bc holdfast.BundleComponent
		err := r.Scan(&bc.ItemID, &bc.Quantity)
		return bc, err
	})
}

func (d *engineDriver) DeleteBundle(ctx context.Context, tx pgx.Tx, shop, item int64) (bool, error) {
	c := d.c()
	tag, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "bundle_delete"), shop, item)
	return tag.RowsAffected() > 0, err
}

func (d *engineDriver) ReadBundles(ctx context.Context, tx pgx.Tx, own bool, shop int64) (map[int64][]holdfast.BundleComponent, error) {
	c := d.c()
	var rows pgx.Rows
	var err error
	if own {
		rows, err = c.pool.Query(ctx, c.q(ctx, holdfast.RouteRead, "bundles_read"), shop)
	} else {
		rows, err = tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "bundles_read"), shop)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64][]holdfast.BundleComponent{}
	for rows.Next() {
		var id int64
		var bc holdfast.BundleComponent
		if err := rows.Scan(&id, &bc.ItemID, &bc.Quantity); err != nil {
			return nil, err
		}
		out[id] = append(out[id], bc)
	}
	return out, rows.Err()
}

// bundleColumns answers b's components as the columns the statements take.
func bundleColumns(b holdfast.Bundle) ([]int64, []int32) {
	ids := make([]int64, len(b.Components))
	qtys := make([]int32, len(b.Components))
	for i, bc := range b.Components {
		ids[i], qtys[i] = bc.ItemID, int32(bc.Quantity)
	}
	return ids, qtys
}
