package mysql

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// Fair drops on MySQL/MariaDB (driver.Dropper; migration 018): the drops
// and drop_entries tables; an entrant's wait is a waiters row without
// waiter_lines until the draw.

func (d *engineDriver) PutDrop(ctx context.Context, tx *sql.Tx, p holdfast.DropParams, seed []byte) error {
	c := d.c()
	const route = holdfast.RouteAdjust
	locked, err := c.lockKey(ctx, tx, route, p.Key)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "drop_put"), p.ShopID, p.ItemID, p.LocationID, p.StartsAt.UTC(), p.Window.Microseconds(), seed); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "drop_entries_clear"), p.ShopID, p.ItemID, p.LocationID); err != nil {
		return err
	}
	if !locked {
		return nil // no key row yet: no buffer to empty
	}
	// The buffer goes back to unallocated: from now on nothing is taken
	// from it until the draw (key_state.sql's refill adds nothing).
	return c.shrink(ctx, tx, route, p.Key, true)
}

func scanDropRow(row *sql.Row, k holdfast.Key, now *time.Time) (*hfdriver.DropRow, error) {
	var r hfdriver.DropRow
	var windowUS int64
	var state string
	var drawn sql.NullTime
	dest := []any{&r.StartsAt, &windowUS, &r.SeedRaw, &state, &drawn, &r.Entries}
	if now != nil {
		dest = append(dest, now)
	}
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, holdfast.ErrNotFound
		}
		return nil, err
	}
	r.Key, r.Window, r.State = k, time.Duration(windowUS)*time.Microsecond, holdfast.DropState(state)
	r.Commitment = holdfast.DropCommitment(r.SeedRaw)
	if drawn.Valid {
		r.DrawnAt = drawn.Time
	}
	return &r, nil
}

func (d *engineDriver) LockDrop(ctx context.Context, tx *sql.Tx, k holdfast.Key) (*hfdriver.DropRow, error) {
	c := d.c()
	var now time.Time
	r, err := scanDropRow(tx.QueryRowContext(ctx, c.q(ctx, holdfast.RouteReserve, "drop_lock"), c.now(), k.ShopID, k.ItemID, k.LocationID), k, &now)
	if err != nil {
		return nil, err
	}
	r.Now = now
	return r, nil
}

func (d *engineDriver) OpenDrops(ctx context.Context, shop int64, keys []holdfast.Key) ([]holdfast.Key, error) {
	c := d.c()
	type jk struct {
		ItemID     int64 `json:"item_id"`
		LocationID int64 `json:"location_id"`
	}
	js := make([]jk, len(keys))
	for i, k := range keys {
		js[i] = jk{k.ItemID, k.LocationID}
	}
	raw, err := json.Marshal(js)
	if err != nil {
		return nil, err
	}
	rows, err := c.db.QueryContext(ctx, c.q(ctx, holdfast.RouteReserve, "drop_open"), string(raw), shop)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []holdfast.Key
	for rows.Next() {
		k := holdfast.Key{ShopID: shop}
		if err := rows.Scan(&k.ItemID, &k.LocationID); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

func (d *engineDriver) EnterDrop(ctx context.Context, tx *sql.Tx, k holdfast.Key, r *hfdriver.Reservation, short []holdfast.Shortfall, wait time.Duration, until time.Time) error {
	c := d.c()
	const route = holdfast.RouteReserve
	_, err := tx.ExecContext(ctx, c.q(ctx, route, "drop_enter"), k.ShopID, k.ItemID, k.LocationID, r.BuyerHash, r.Checkout[:], wait.Microseconds())
	if isDup(err) {
		var first []byte
		if err := tx.QueryRowContext(ctx, c.q(ctx, route, "drop_entry_of"), k.ShopID, k.ItemID, k.LocationID, r.BuyerHash).Scan(&first); err != nil {
			return err
		}
		if id, _ := uuid.FromBytes(first); id == r.Checkout {
			return errRetry // this checkout entered meanwhile: answer its wait
		}
		return holdfast.ErrDropEntered
	}
	if err != nil {
		return err
	}
	shortRaw, err := json.Marshal(short)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, c.q(ctx, route, "drop_wait"), r.Shop, r.Checkout[:], string(r.LinesRaw), string(shortRaw), r.TTL.Microseconds(), c.now(), until.UTC(), r.BuyerHash)
	if isDup(err) {
		return errRetry // the checkout waits (or waited) already: answer it
	}
	return err
}

func (d *engineDriver) DropEntries(ctx context.Context, tx *sql.Tx, k holdfast.Key) ([]hfdriver.DropEntry, error) {
	c := d.c()
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteReplenish, "drop_entries"), k.ShopID, k.ItemID, k.LocationID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []hfdriver.DropEntry
	for rows.Next() {
		var e hfdriver.DropEntry
		var id, hash, short []byte
		var ttl, wait int64
		if err := rows.Scan(&id, &hash, &e.LinesRaw, &ttl, &wait, &short, &e.Waiting); err != nil {
			return nil, err
		}
		if e.Checkout, err = uuid.FromBytes(id); err != nil {
			return nil, err
		}
		e.Ticket = hex.EncodeToString(hash)
		e.TTL, e.Wait = time.Duration(ttl)*time.Microsecond, time.Duration(wait)*time.Microsecond
		if err := json.Unmarshal(e.LinesRaw, &e.Lines); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(short, &e.Short); err != nil {
			return nil, err
		}
		// The cart as the engine hands it to Enqueue: canonical JSON.
		if e.LinesRaw, err = json.Marshal(e.Lines); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func (d *engineDriver) Unwait(ctx context.Context, tx *sql.Tx, shop int64, checkout uuid.UUID) (bool, error) {
	c := d.c()
	res, err := tx.ExecContext(ctx, c.q(ctx, holdfast.RouteReplenish, "drop_unwait"), shop, checkout[:], shop, checkout[:])
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (d *engineDriver) MarkDrawn(ctx context.Context, tx *sql.Tx, k holdfast.Key, order []uuid.UUID) error {
	c := d.c()
	const route = holdfast.RouteReplenish
	res, err := tx.ExecContext(ctx, c.q(ctx, route, "drop_drawn"), c.now(), k.ShopID, k.ItemID, k.LocationID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // drawn already (the caller holds the row's lock: not seen)
	}
	ids := make([]string, len(order))
	for i, id := range order {
		ids[i] = hex.EncodeToString(id[:])
	}
	raw, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, c.q(ctx, route, "drop_rank"), string(raw), k.ShopID, k.ItemID, k.LocationID)
	return err
}

func (d *engineDriver) DueDrops(ctx context.Context, tx *sql.Tx, limit int) ([]holdfast.Key, error) {
	c := d.c()
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteReplenish, "drop_due"), c.now(), limit)
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

func (d *engineDriver) ReadDrop(ctx context.Context, tx *sql.Tx, k holdfast.Key) (*holdfast.Drop, error) {
	c := d.c()
	r, err := scanDropRow(tx.QueryRowContext(ctx, c.q(ctx, holdfast.RouteRead, "drop_read"), k.ShopID, k.ItemID, k.LocationID), k, nil)
	if err != nil {
		return nil, err
	}
	out := r.Drop
	out.Entrants = []holdfast.DropEntrant{}
	if out.State != holdfast.DropDrawn {
		return &out, nil // the seed stays secret until the draw
	}
	out.Seed = hex.EncodeToString(r.SeedRaw)
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "drop_entrants"), k.ShopID, k.ItemID, k.LocationID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var e holdfast.DropEntrant
		var id, hash []byte
		if err := rows.Scan(&e.Rank, &id, &hash); err != nil {
			return nil, err
		}
		if e.CheckoutID, err = uuid.FromBytes(id); err != nil {
			return nil, err
		}
		e.Ticket = hex.EncodeToString(hash)
		out.Entrants = append(out.Entrants, e)
	}
	return &out, rows.Err()
}
