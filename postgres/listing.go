package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
)

// listHolds reads a page of q's holds after cur, q.Limit+1 of them
// (driver.Lister.ListHolds).
func (c *Client) listHolds(ctx context.Context, tx pgx.Tx, q holdfast.HoldQuery, cur *holdfast.HoldCursor) ([]holdfast.Hold, error) {
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
	var companion *string
	if f := q.CompanionLinesFilter(); f != nil {
		s := string(f)
		companion = &s
	}
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "list_holds"), q.ShopID, filter, string(q.Status), at, id, q.Limit+1, c.now(), companion)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var holds []holdfast.Hold
	for rows.Next() {
		h := holdfast.Hold{ShopID: q.ShopID}
		var raw []byte
		var status string
		var lapsed bool
		var released []byte
		if err := rows.Scan(&h.CheckoutID, &status, &raw, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &h.EndedAt, &lapsed, &h.Revision, &released); err != nil {
			return nil, err
		}
		if err := unmarshalReleased(released, &h); err != nil {
			return nil, err
		}
		h.Status = holdfast.Status(status)
		h.Claimable = h.Status == holdfast.StatusHeld
		if lapsed {
			h.Status = holdfast.StatusExpired
		}
		if err := json.Unmarshal(raw, &h.Lines); err != nil {
			return nil, err
		}
		holds = append(holds, h)
	}
	return holds, rows.Err()
}

// listLedger reads a page of q's key's ledger after cur, q.Limit+1
// entries (driver.Lister.ListLedger).
func (c *Client) listLedger(ctx context.Context, tx pgx.Tx, q holdfast.LedgerQuery, cur *holdfast.LedgerCursor) ([]holdfast.LedgerEntry, error) {
	var after *int64
	if cur != nil {
		after = &cur.ID
	}
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "list_ledger"), q.ShopID, q.ItemID, q.LocationID, after, q.Limit+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var entries []holdfast.LedgerEntry
	for rows.Next() {
		var e holdfast.LedgerEntry
		if err := rows.Scan(&e.ID, &e.Delta, &e.AvailableAfter, &e.Reason, &e.Reference, &e.CreatedAt); err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, rows.Err()
}

// listKeys reads q's shop's keys by activity (driver.Lister.ListKeys).
func (c *Client) listKeys(ctx context.Context, tx pgx.Tx, q holdfast.KeyQuery) ([]holdfast.Key, error) {
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "list_keys"), q.ShopID, q.Limit)
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
