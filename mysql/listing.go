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

// listHolds reads a page of q's holds after cur, q.Limit+1 of them
// (driver.Lister.ListHolds).
func (c *Client) listHolds(ctx context.Context, tx *sql.Tx, q holdfast.HoldQuery, cur *holdfast.HoldCursor) ([]holdfast.Hold, error) {
	// The first page starts past every row.
	at, id := any(time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)), any(bytes.Repeat([]byte{0xff}, 16))
	if cur != nil {
		at, id = cur.CreatedAt.UTC(), cur.CheckoutID[:]
	}
	var filter any
	if f := q.LinesFilter(); f != nil {
		filter = string(f)
	}
	var companion any
	if f := q.CompanionLinesFilter(); f != nil {
		companion = string(f)
	}
	status := string(q.Status)
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "list_holds"),
		c.now(), q.ShopID, at, at, id, filter, filter, companion, status, status, q.Limit+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var holds []holdfast.Hold
	for rows.Next() {
		h := holdfast.Hold{ShopID: q.ShopID}
		var rawID, raw []byte
		var st string
		var ended sql.NullTime
		var lapsed bool
		var released []byte
		if err := rows.Scan(&rawID, &st, &raw, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &ended, &lapsed, &h.Revision, &released); err != nil {
			return nil, err
		}
		if len(released) > 0 && string(released) != "null" {
			if err := json.Unmarshal(released, &h.Released); err != nil {
				return nil, err
			}
		}
		if h.CheckoutID, err = uuid.FromBytes(rawID); err != nil {
			return nil, err
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
			return nil, err
		}
		slices.SortFunc(h.Lines, holdfast.CompareLines)
		holds = append(holds, h)
	}
	return holds, rows.Err()
}

// listLedger reads a page of q's key's ledger after cur, q.Limit+1
// entries (driver.Lister.ListLedger).
func (c *Client) listLedger(ctx context.Context, tx *sql.Tx, q holdfast.LedgerQuery, cur *holdfast.LedgerCursor) ([]holdfast.LedgerEntry, error) {
	after := int64(math.MaxInt64) // the first page starts past every id
	if cur != nil {
		after = cur.ID
	}
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "list_ledger"),
		q.ShopID, q.ItemID, q.LocationID, after, q.Limit+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var entries []holdfast.LedgerEntry
	for rows.Next() {
		var e holdfast.LedgerEntry
		var at time.Time
		if err := rows.Scan(&e.ID, &e.Delta, &e.AvailableAfter, &e.Reason, &e.Reference, &at); err != nil {
			return nil, err
		}
		e.CreatedAt = at
		entries = append(entries, e)
	}
	return entries, rows.Err()
}

// listKeys reads q's shop's keys by activity (driver.Lister.ListKeys).
func (c *Client) listKeys(ctx context.Context, tx *sql.Tx, q holdfast.KeyQuery) ([]holdfast.Key, error) {
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "list_keys"), q.ShopID, q.ShopID, q.Limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []holdfast.Key
	for rows.Next() {
		k := holdfast.Key{ShopID: q.ShopID}
		if err := rows.Scan(&k.ItemID, &k.LocationID); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}
