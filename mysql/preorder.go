package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// Pre-orders on MySQL/MariaDB (driver.Preorders): the setting in
// preorders, owed lines in preorder_owed (migration 17); the headroom is
// the companion key's stock, moved by the stock attempts.

func (d *engineDriver) LockPreorder(ctx context.Context, tx *sql.Tx, k holdfast.Key) (int, time.Time, error) {
	c := d.c()
	var cap int
	var at time.Time
	err := tx.QueryRowContext(ctx, c.q(ctx, holdfast.RouteAdjust, "preorder_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&cap, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, time.Time{}, nil
	}
	return cap, at, err
}

func (d *engineDriver) WritePreorder(ctx context.Context, tx *sql.Tx, p holdfast.Preorder) error {
	c := d.c()
	if p.Cap == 0 {
		_, err := tx.ExecContext(ctx, c.q(ctx, holdfast.RouteAdjust, "preorder_delete"), p.ShopID, p.ItemID, p.LocationID)
		return err
	}
	_, err := tx.ExecContext(ctx, c.q(ctx, holdfast.RouteAdjust, "preorder_set"), p.ShopID, p.ItemID, p.LocationID, p.Cap, p.ExpectedAt.UTC(), c.now())
	return err
}

func (d *engineDriver) ReadPreorders(ctx context.Context, tx *sql.Tx, own bool, shop int64, items, locs []int64) ([]holdfast.Preorder, error) {
	c := d.c()
	type key struct {
		Item int64 `json:"item_id"`
		Loc  int64 `json:"location_id"`
	}
	keys := make([]key, len(items))
	for i := range items {
		keys[i] = key{items[i], locs[i]}
	}
	raw, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	var rows *sql.Rows
	if own {
		rows, err = c.db.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "preorders_read"), string(raw), shop)
	} else {
		rows, err = tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "preorders_read"), string(raw), shop)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []holdfast.Preorder
	for rows.Next() {
		p := holdfast.Preorder{Key: holdfast.Key{ShopID: shop}}
		var held, owed int64
		if err := rows.Scan(&p.ItemID, &p.LocationID, &p.Cap, &p.ExpectedAt, &held, &owed); err != nil {
			return nil, err
		}
		p.ExpectedAt = p.ExpectedAt.UTC()
		p.Held, p.Owed = int(held), int(owed)
		p.Headroom = max(0, p.Cap-p.Held-p.Owed)
		out = append(out, p)
	}
	return out, rows.Err()
}

func (d *engineDriver) LockedLevel(ctx context.Context, tx *sql.Tx, route string, k holdfast.Key) (*holdfast.Level, error) {
	c := d.c()
	locked, err := c.lockKey(ctx, tx, route, k)
	if err != nil {
		return nil, err
	}
	if !locked {
		_, err := tx.ExecContext(ctx, c.q(ctx, route, "lock_create"), k.ShopID, k.ItemID, k.LocationID)
		if isDup(err) {
			return nil, errRetry // created meanwhile: lock it on the next run
		}
		if err != nil {
			return nil, err
		}
	}
	return c.level(ctx, tx, route, k)
}

func (d *engineDriver) OwePreorders(ctx context.Context, tx *sql.Tx, shop int64, checkout uuid.UUID, at time.Time, lines []holdfast.Line) error {
	c := d.c()
	raw, err := json.Marshal(lines)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, c.q(ctx, holdfast.RouteClaim, "preorder_owe"), shop, checkout[:], at.UTC(), string(raw))
	return err
}

func (d *engineDriver) OwedPreorders(ctx context.Context, tx *sql.Tx, k holdfast.Key, limit int) ([]hfdriver.Owed, error) {
	c := d.c()
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteAdjust, "preorder_owed"), k.ShopID, k.ItemID, k.LocationID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []hfdriver.Owed
	for rows.Next() {
		o := hfdriver.Owed{Key: k}
		var id []byte
		if err := rows.Scan(&o.ID, &id, &o.Units); err != nil {
			return nil, err
		}
		if o.Checkout, err = uuid.FromBytes(id); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

func (d *engineDriver) ConvertOwed(ctx context.Context, tx *sql.Tx, o hfdriver.Owed, units int) error {
	c := d.c()
	const route = holdfast.RouteAdjust
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "preorder_convert_event"), units, units, c.now(), o.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "preorder_convert_delete"), o.ID, units); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, c.q(ctx, route, "preorder_convert_update"), units, o.ID, units)
	return err
}

func (d *engineDriver) OwedKeys(ctx context.Context, limit int) ([]holdfast.Key, error) {
	c := d.c()
	rows, err := c.db.QueryContext(ctx, c.q(ctx, holdfast.RouteReplenish, "preorder_owed_keys"), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []holdfast.Key
	for rows.Next() {
		var k holdfast.Key
		if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

func (d *engineDriver) ReadPreorderAccounts(ctx context.Context) ([]holdfast.PreorderAccount, error) {
	c := d.c()
	rows, err := c.db.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "invariant_preorders"))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []holdfast.PreorderAccount
	for rows.Next() {
		var a holdfast.PreorderAccount
		if err := rows.Scan(&a.ShopID, &a.ItemID, &a.LocationID, &a.Cap, &a.Available, &a.Held, &a.Owed); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
