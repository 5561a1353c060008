package postgres

import (
	"context"
	"encoding/json"
	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/jackc/pgx/v5"
	"time"
)

// Holds lists a page of a shop's holds and outcomes, newest first (see
// HoldQuery and HoldPage). A rejected query is an *ArgumentError and reads
// nothing.
func (c *Client) Holds(ctx context.Context, q holdfast.HoldQuery) (*holdfast.HoldPage, error) {
	q, cur, err := q.Validate()
	if err != nil {
		return nil, err
	}
	var at *time.Time
	var id *uuid.UUID
	if cur != nil {
		at, id = &cur.CreatedAt, &cur.CheckoutID
	}
	var filter *string
	if f := q.LinesFilter(); f != nil {
		s := string(f)
		filter = &s
	}
	page := &holdfast.HoldPage{Holds: []holdfast.Hold{}}
	err = c.run(ctx, c.pool, holdfast.RouteRead, true, true, func(tx pgx.Tx, _ int) error {
		page.Holds, page.Next = page.Holds[:0], ""
		rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "list_holds"), q.ShopID, filter, string(q.Status), at, id, q.Limit+1, c.now())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			h := holdfast.Hold{ShopID: q.ShopID}
			var raw []byte
			var status string
			var lapsed bool
			var released []byte
			if err := rows.Scan(&h.CheckoutID, &status, &raw, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &h.EndedAt, &lapsed, &h.Revision, &released); err != nil {
				return err
			}
			if err := unmarshalReleased(released, &h); err != nil {
				return err
			}
			h.Status = holdfast.Status(status)
			h.Claimable = h.Status == holdfast.StatusHeld
			if lapsed {
				h.Status = holdfast.StatusExpired
			}
			if err := json.Unmarshal(raw, &h.Lines); err != nil {
				return err
			}
			page.Holds = append(page.Holds, h)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	holdfast.TrimHoldPage(page, q)
	return page, nil
}

// Ledger lists a page of a key's ledger, newest first (see LedgerQuery and
// LedgerPage). A key never stocked has an empty ledger. A rejected query
// is an *ArgumentError and reads nothing.
func (c *Client) Ledger(ctx context.Context, q holdfast.LedgerQuery) (*holdfast.LedgerPage, error) {
	q, cur, err := q.Validate()
	if err != nil {
		return nil, err
	}
	var after *int64
	if cur != nil {
		after = &cur.ID
	}
	page := &holdfast.LedgerPage{Key: q.Key, Entries: []holdfast.LedgerEntry{}}
	err = c.run(ctx, c.pool, holdfast.RouteRead, true, true, func(tx pgx.Tx, _ int) error {
		page.Entries = page.Entries[:0]
		rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "list_ledger"), q.ShopID, q.ItemID, q.LocationID, after, q.Limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e holdfast.LedgerEntry
			if err := rows.Scan(&e.ID, &e.Delta, &e.AvailableAfter, &e.Reason, &e.Reference, &e.CreatedAt); err != nil {
				return err
			}
			page.Entries = append(page.Entries, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	holdfast.TrimLedgerPage(page, q)
	return page, nil
}

// Keys lists a shop's keys by activity — the most units in active holds
// first, then the most recently changed stock — with their levels (each
// read as Level reads it). A rejected query is an *ArgumentError.
func (c *Client) Keys(ctx context.Context, q holdfast.KeyQuery) ([]holdfast.Level, error) {
	q, err := q.Validate()
	if err != nil {
		return nil, err
	}
	var keys []holdfast.Key
	err = c.run(ctx, c.pool, holdfast.RouteRead, true, true, func(tx pgx.Tx, _ int) error {
		keys = keys[:0]
		rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "list_keys"), q.ShopID, q.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			k := holdfast.Key{ShopID: q.ShopID}
			if err := rows.Scan(&k.ItemID, &k.LocationID); err != nil {
				return err
			}
			keys = append(keys, k)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return holdfast.KeyLevels(ctx, c, keys)
}
