package postgres

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Fair drops on PostgreSQL (driver.Dropper; migration 018): the drops and
// drop_entries tables; an entrant's wait is a waiters row without
// waiter_lines until the draw.

func (d *engineDriver) PutDrop(ctx context.Context, tx pgx.Tx, p holdfast.DropParams, seed []byte) error {
	c := d.c()
	const route = holdfast.RouteAdjust
	if _, err := tx.Exec(ctx, c.q(ctx, route, "lock_key"), keyHash(p.Key)); err != nil {
		return err
	}
	batch := &pgx.Batch{}
	batch.Queue(c.q(ctx, route, "drop_put"), p.ShopID, p.ItemID, p.LocationID, p.StartsAt, p.Window.Microseconds(), seed)
	batch.Queue(c.q(ctx, route, "drop_entries_clear"), p.ShopID, p.ItemID, p.LocationID)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return err
	}
	// The buffer goes back to unallocated: from now on nothing is taken
	// from it until the draw (refill.sql adds nothing while it is open).
	return c.shrink(ctx, tx, route, p.Key, true, 0)
}

func scanDrop(row pgx.Row, k holdfast.Key, now *time.Time) (*driver.DropRow, error) {
	var r driver.DropRow
	var windowUS int64
	var state string
	var drawn *time.Time
	dest := []any{&r.StartsAt, &windowUS, &r.SeedRaw, &state, &drawn, &r.Entries}
	if now != nil {
		dest = append(dest, now)
	}
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, holdfast.ErrNotFound
		}
		return nil, err
	}
	r.Key, r.Window, r.State = k, time.Duration(windowUS)*time.Microsecond, holdfast.DropState(state)
	r.Commitment = holdfast.DropCommitment(r.SeedRaw)
	if drawn != nil {
		r.DrawnAt = *drawn
	}
	return &r, nil
}

func (d *engineDriver) LockDrop(ctx context.Context, tx pgx.Tx, k holdfast.Key) (*driver.DropRow, error) {
	c := d.c()
	var now time.Time
	r, err := scanDrop(tx.QueryRow(ctx, c.q(ctx, holdfast.RouteReserve, "drop_lock"), k.ShopID, k.ItemID, k.LocationID, c.now()), k, &now)
	if err != nil {
		return nil, err
	}
	r.Now = now
	return r, nil
}

func (d *engineDriver) OpenDrops(ctx context.Context, shop int64, keys []holdfast.Key) ([]holdfast.Key, error) {
	c := d.c()
	items, locs := make([]int64, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		items[i], locs[i] = k.ItemID, k.LocationID
	}
	rows, err := c.pool.Query(ctx, c.q(ctx, holdfast.RouteReserve, "drop_open"), shop, items, locs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (holdfast.Key, error) {
		k := holdfast.Key{ShopID: shop}
		err := r.Scan(&k.ItemID, &k.LocationID)
		return k, err
	})
}

func (d *engineDriver) EnterDrop(ctx context.Context, tx pgx.Tx, k holdfast.Key, r *driver.Reservation, short []holdfast.Shortfall, wait time.Duration, until time.Time) error {
	c := d.c()
	const route = holdfast.RouteReserve
	tag, err := tx.Exec(ctx, c.q(ctx, route, "drop_enter"), k.ShopID, k.ItemID, k.LocationID, r.BuyerHash, r.Checkout, wait.Microseconds())
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		var first uuid.UUID
		if err := tx.QueryRow(ctx, c.q(ctx, route, "drop_entry_of"), k.ShopID, k.ItemID, k.LocationID, r.BuyerHash).Scan(&first); err != nil {
			return err
		}
		if first == r.Checkout {
			return errRetry // this checkout entered meanwhile: answer its wait
		}
		return holdfast.ErrDropEntered
	}
	shortRaw, err := json.Marshal(short)
	if err != nil {
		return err
	}
	var seq int64
	err = tx.QueryRow(ctx, c.q(ctx, route, "drop_wait"), r.Shop, r.Checkout, string(r.LinesRaw), string(shortRaw), r.TTL.Microseconds(), until, c.now(), r.BuyerHash).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return errRetry // the checkout waits (or waited) already: answer it
	}
	return err
}

func (d *engineDriver) DropEntries(ctx context.Context, tx pgx.Tx, k holdfast.Key) ([]driver.DropEntry, error) {
	c := d.c()
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "drop_entries"), k.ShopID, k.ItemID, k.LocationID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.DropEntry, error) {
		var e driver.DropEntry
		var hash, short []byte
		var ttl, wait int64
		if err := r.Scan(&e.Checkout, &hash, &e.LinesRaw, &ttl, &wait, &short, &e.Waiting); err != nil {
			return e, err
		}
		e.Ticket = hex.EncodeToString(hash)
		e.TTL, e.Wait = time.Duration(ttl)*time.Microsecond, time.Duration(wait)*time.Microsecond
		if err := json.Unmarshal(e.LinesRaw, &e.Lines); err != nil {
			return e, err
		}
		return e, json.Unmarshal(short, &e.Short)
	})
}

func (d *engineDriver) Unwait(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID) (bool, error) {
	c := d.c()
	tag, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "drop_unwait"), shop, checkout)
	return tag.RowsAffected() > 0, err
}

func (d *engineDriver) MarkDrawn(ctx context.Context, tx pgx.Tx, k holdfast.Key, order []uuid.UUID) error {
	c := d.c()
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteReplenish, "drop_drawn"), k.ShopID, k.ItemID, k.LocationID, order, c.now())
	return err
}

func (d *engineDriver) DueDrops(ctx context.Context, tx pgx.Tx, limit int) ([]holdfast.Key, error) {
	c := d.c()
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteReplenish, "drop_due"), c.now(), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (holdfast.Key, error) {
		var k holdfast.Key
		err := r.Scan(&k.ShopID, &k.ItemID, &k.LocationID)
		return k, err
	})
}

func (d *engineDriver) ReadDrop(ctx context.Context, tx pgx.Tx, k holdfast.Key) (*holdfast.Drop, error) {
	c := d.c()
	r, err := scanDrop(tx.QueryRow(ctx, c.q(ctx, holdfast.RouteRead, "drop_read"), k.ShopID, k.ItemID, k.LocationID), k, nil)
	if err != nil {
		return nil, err
	}
	out := r.Drop
	out.Entrants = []holdfast.DropEntrant{}
	if out.State != holdfast.DropDrawn {
		return &out, nil // the seed stays secret until the draw
	}
	out.Seed = hex.EncodeToString(r.SeedRaw)
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "drop_entrants"), k.ShopID, k.ItemID, k.LocationID)
	if err != nil {
		return nil, err
	}
	out.Entrants, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (holdfast.DropEntrant, error) {
		var e holdfast.DropEntrant
		var hash []byte
		err := r.Scan(&e.Rank, &e.CheckoutID, &hash)
		e.Ticket = hex.EncodeToString(hash)
		return e, err
	})
	return &out, err
}
