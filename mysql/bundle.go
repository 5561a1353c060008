package mysql

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// Bundles on MySQL/MariaDB (driver.Bundler): bundle_components and the
// shop's lock row bundle_shops (migration 16).

func (d *engineDriver) LockBundles(ctx context.Context, tx *sql.Tx, shop int64) error {
	c := d.c()
	_, err := tx.ExecContext(ctx, c.q(ctx, holdfast.RouteAdjust, "bundle_lock"), shop)
	return err
}

func (d *engineDriver) BundleFacts(ctx context.Context, tx *sql.Tx, b holdfast.Bundle) (hfdriver.BundleFacts, error) {
	c := d.c()
	ids := make([]int64, len(b.Components))
	for i, bc := range b.Components {
		ids[i] = bc.ItemID
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return hfdriver.BundleFacts{}, err
	}
	var f hfdriver.BundleFacts
	err = tx.QueryRowContext(ctx, c.q(ctx, holdfast.RouteAdjust, "bundle_facts"),
		b.ShopID, b.ItemID, b.ShopID, b.ItemID, b.ShopID, string(idsJSON), b.ShopID, b.ItemID).
		Scan(&f.Stocked, &f.ComponentOf, &f.Nested, &f.Others)
	return f, err
}

func (d *engineDriver) WriteBundle(ctx context.Context, tx *sql.Tx, b holdfast.Bundle) error {
	c := d.c()
	if _, err := tx.ExecContext(ctx, c.q(ctx, holdfast.RouteAdjust, "bundle_delete"), b.ShopID, b.ItemID); err != nil {
		return err
	}
	comps, err := json.Marshal(b.Components)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, c.q(ctx, holdfast.RouteAdjust, "bundle_insert"), b.ShopID, b.ItemID, c.now(), string(comps))
	return err
}

func (d *engineDriver) GetBundle(ctx context.Context, tx *sql.Tx, shop, item int64) ([]holdfast.BundleComponent, error) {
	c := d.c()
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "bundle_get"), shop, item)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []holdfast.BundleComponent
	for rows.Next() {
		var bc holdfast.BundleComponent
		if err := rows.Scan(&bc.ItemID, &bc.Quantity); err != nil {
			return nil, err
		}
		out = append(out, bc)
	}
	return out, rows.Err()
}

func (d *engineDriver) DeleteBundle(ctx context.Context, tx *sql.Tx, shop, item int64) (bool, error) {
	c := d.c()
	res, err := tx.ExecContext(ctx, c.q(ctx, holdfast.RouteAdjust, "bundle_delete"), shop, item)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (d *engineDriver) ReadBundles(ctx context.Context, tx *sql.Tx, own bool, shop int64) (map[int64][]holdfast.BundleComponent, error) {
	c := d.c()
	var rows *sql.Rows
	var err error
	if own {
		rows, err = c.db.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "bundles_read"), shop)
	} else {
		rows, err = tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "bundles_read"), shop)
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
