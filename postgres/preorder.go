package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Pre-orders on PostgreSQL (driver.Preorders): the setting in preorders,
// owed lines in preorder_owed (migration 17); the headroom is the
// companion key's stock, moved by the stock attempts.

func (d *engineDriver) LockPreorder(ctx context.Context, tx pgx.Tx, k holdfast.Key) (int, time.Time, error) {
	c := d.c()
	var cap int
	var at time.Time
	err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteAdjust, "preorder_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&cap, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, time.Time{}, nil
	}
	return cap, at, err
}

func (d *engineDriver) WritePreorder(ctx context.Context, tx pgx.Tx, p holdfast.Preorder) error {
	c := d.c()
	if p.Cap == 0 {
		_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "preorder_delete"), p.ShopID, p.ItemID, p.LocationID)
		return err
	}
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "preorder_set"), p.ShopID, p.ItemID, p.LocationID, p.Cap, p.ExpectedAt, c.now())
	return err
}

func (d *engineDriver) ReadPreorders(ctx context.Context, tx pgx.Tx, own bool, shop int64, items, locs []int64) ([]holdfast.Preorder, error) {
	c := d.c()
	var rows pgx.Rows
	var err error
	if own {
		rows, err = c.pool.Query(ctx, c.q(ctx, holdfast.RouteRead, "preorders_read"), shop, items, locs)
	} else {
		rows, err = tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "preorders_read"), shop, items, locs)
	}
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (holdfast.Preorder, error) {
		p := holdfast.Preorder{Key: holdfast.Key{ShopID: shop}}
		var held, owed int64
		err := r.Scan(&p.ItemID, &p.LocationID, &p.Cap, &p.ExpectedAt, &held, &owed)
		p.ExpectedAt = p.ExpectedAt.UTC()
		p.Held, p.Owed = int(held), int(owed)
		p.Headroom = max(0, p.Cap-p.Held-p.Owed)
		return p, err
	})
}

func (d *engineDriver) LockedLevel(ctx context.Context, tx pgx.Tx, route string, k holdfast.Key) (*holdfast.Level, error) {
	c := d.c()
	if _, err := tx.Exec(ctx, c.q(ctx, route, "lock_key"), keyHash(k)); err != nil {
		return nil, err
	}
	return c.level(ctx, tx, route, k)
}

func (d *engineDriver) OwePreorders(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, at time.Time, lines []holdfast.Line) error {
	c := d.c()
	items, locs, qtys := columns(lines)
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteClaim, "preorder_owe"), shop, checkout, at, items, locs, qtys)
	return err
}

func (d *engineDriver) OwedPreorders(ctx context.Context, tx pgx.Tx, k holdfast.Key, limit int) ([]driver.Owed, error) {
	c := d.c()
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteAdjust, "preorder_owed"), k.ShopID, k.ItemID, k.LocationID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Owed, error) {
		o := driver.Owed{Key: k}
		err := r.Scan(&o.ID, &o.Checkout, &o.Units)
		return o, err
	})
}

func (d *engineDriver) ConvertOwed(ctx context.Context, tx pgx.Tx, o driver.Owed, units int) error {
	c := d.c()
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "preorder_convert"), o.ID, units, c.now(), o.Key.ShopID)
	return err
}

func (d *engineDriver) OwedKeys(ctx context.Context, limit int) ([]holdfast.Key, error) {
	c := d.c()
	rows, err := c.pool.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "preorder_owed_keys"), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (holdfast.Key, error) {
		var k holdfast.Key
		err := r.Scan(&k.ShopID, &k.ItemID, &k.LocationID)
		return k, err
	})
}

func (d *engineDriver) ReadPreorderAccounts(ctx context.Context) ([]holdfast.PreorderAccount, error) {
	c := d.c()
	rows, err := c.pool.Query(ctx, c.q(ctx, holdfast.RouteRead, "invariant_preorders"))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (holdfast.PreorderAccount, error) {
		var a holdfast.PreorderAccount
		err := r.Scan(&a.ShopID, &a.ItemID, &a.LocationID, &a.Cap, &a.Available, &a.Held, &a.Owed)
		return a, err
	})
}
