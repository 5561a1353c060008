package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Holds lists a page of a shop's holds and outcomes, newest first (see
// holdfast.HoldQuery and holdfast.HoldPage). A rejected query is an
// *holdfast.ArgumentError and reads nothing.
func (c *Client) Holds(ctx context.Context, q holdfast.HoldQuery) (*holdfast.HoldPage, error) {
	q, cur, err := q.Validate()
	if err != nil {
		return nil, err
	}
	// The first page starts past every row.
	at, id := any(time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)), any(bytes.Repeat([]byte{0xff}, 16))
	if cur != nil {
		at, id = cur.CreatedAt.UTC(), cur.CheckoutID[:]
	}
	var filter any
	if f := q.LinesFilter(); f != nil {
		filter = string(f)
	}
	status := string(q.Status)
	page := &holdfast.HoldPage{Holds: []holdfast.Hold{}}
	err = c.run(ctx, nil, holdfast.RouteRead, true, func(tx *sql.Tx, _ int) error {
		page.Holds = page.Holds[:0]
		rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "list_holds"),
			c.now(), q.ShopID, at, at, id, filter, filter, status, status, q.Limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			h := holdfast.Hold{ShopID: q.ShopID}
			var rawID, raw []byte
			var st string
			var ended sql.NullTime
			var lapsed bool
			var released []byte
			if err := rows.Scan(&rawID, &st, &raw, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &ended, &lapsed, &h.Revision, &released); err != nil {
				return err
			}
			if len(released) > 0 && string(released) != "null" {
				if err := json.Unmarshal(released, &h.Released); err != nil {
					return err
				}
			}
			if h.CheckoutID, err = uuid.FromBytes(rawID); err != nil {
				return err
			}
			h.Status = holdfast.Status(st)
			h.Claimable = h.Status == holdfast.StatusHeld
			if lapsed {
				h.Status = holdfast.StatusExpired
			}
			if ended.Valid {
				t := ended.Time
				h.EndedAt = &t
			}
			if err := json.Unmarshal(raw, &h.Lines); err != nil {
				return err
			}
			slices.SortFunc(h.Lines, holdfast.CompareLines)
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

// Ledger lists a page of a key's ledger, newest first (see
// holdfast.LedgerQuery and holdfast.LedgerPage). A rejected query is an
// *holdfast.ArgumentError and reads nothing.
func (c *Client) Ledger(ctx context.Context, q holdfast.LedgerQuery) (*holdfast.LedgerPage, error) {
	q, cur, err := q.Validate()
	if err != nil {
		return nil, err
	}
	after := int64(math.MaxInt64) // the first page starts past every id
	if cur != nil {
		after = cur.ID
	}
	page := &holdfast.LedgerPage{Key: q.Key, Entries: []holdfast.LedgerEntry{}}
	err = c.run(ctx, nil, holdfast.RouteRead, true, func(tx *sql.Tx, _ int) error {
		page.Entries = page.Entries[:0]
		rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "list_ledger"),
			q.ShopID, q.ItemID, q.LocationID, after, q.Limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e holdfast.LedgerEntry
			var at time.Time
			if err := rows.Scan(&e.ID, &e.Delta, &e.AvailableAfter, &e.Reason, &e.Reference, &at); err != nil {
				return err
			}
			e.CreatedAt = at
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
// first, then the most recently changed stock — with their levels. A
// rejected query is an *holdfast.ArgumentError.
func (c *Client) Keys(ctx context.Context, q holdfast.KeyQuery) ([]holdfast.Level, error) {
	q, err := q.Validate()
	if err != nil {
		return nil, err
	}
	var keys []holdfast.Key
	err = c.run(ctx, nil, holdfast.RouteRead, true, func(tx *sql.Tx, _ int) error {
		keys = keys[:0]
		rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "list_keys"), q.ShopID, q.ShopID, q.Limit)
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
