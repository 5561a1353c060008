package engine

import (
	"context"

	"github.com/holdfast/holdfast"
)

// Holds lists a page of a shop's holds and outcomes, newest first (see
// holdfast.HoldQuery and holdfast.HoldPage). A rejected query is an
// *holdfast.ArgumentError and reads nothing.
func (c *Client[TTx]) Holds(ctx context.Context, q holdfast.HoldQuery) (*holdfast.HoldPage, error) {
	q, cur, err := q.Validate()
	if err != nil {
		return nil, err
	}
	var zero TTx
	var holds []holdfast.Hold
	err = c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		holds, err = c.d.ListHolds(ctx, tx, q, cur)
		return err
	})
	if err != nil {
		return nil, err
	}
	if holds == nil {
		holds = []holdfast.Hold{}
	}
	for i := range holds {
		if hasPreordered(holds[i].Lines) {
			holds[i].Lines = foldPreordered(holds[i].ShopID, holds[i].Lines, nil) // preorder.go
		}
	}
	page := &holdfast.HoldPage{Holds: holds}
	trimHoldPage(page, q)
	return page, nil
}

// Ledger lists a page of a key's ledger, newest first (see
// holdfast.LedgerQuery and holdfast.LedgerPage). A key never stocked has
// an empty ledger. A rejected query is an *holdfast.ArgumentError and
// reads nothing.
func (c *Client[TTx]) Ledger(ctx context.Context, q holdfast.LedgerQuery) (*holdfast.LedgerPage, error) {
	q, cur, err := q.Validate()
	if err != nil {
		return nil, err
	}
	var zero TTx
	var entries []holdfast.LedgerEntry
	err = c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		entries, err = c.d.ListLedger(ctx, tx, q, cur)
		return err
	})
	if err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []holdfast.LedgerEntry{}
	}
	page := &holdfast.LedgerPage{Key: q.Key, Entries: entries}
	trimLedgerPage(page, q)
	return page, nil
}

// Keys lists a shop's keys by activity — the most units in active holds
// first, then the most recently changed stock — with their levels, each
// read as Level reads it (so two levels may be of different instants). A
// rejected query is an *holdfast.ArgumentError.
func (c *Client[TTx]) Keys(ctx context.Context, q holdfast.KeyQuery) ([]holdfast.Level, error) {
	q, err := q.Validate()
	if err != nil {
		return nil, err
	}
	var zero TTx
	var keys []holdfast.Key
	err = c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		keys, err = c.d.ListKeys(ctx, tx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]holdfast.Level, 0, len(keys))
	for _, k := range keys {
		if holdfast.IsPreorderKey(k) {
			continue // a pre-order headroom, shown by Preorder (preorder.go)
		}
		l, err := c.Level(ctx, k)
		if err != nil {
			return nil, err
		}
		out = append(out, *l)
	}
	return out, nil
}

// trimHoldPage ends a page of q (validated): the driver read q.Limit+1
// holds, and the last one only says that there is a next page, whose
// cursor names q's shop and filters.
func trimHoldPage(p *holdfast.HoldPage, q holdfast.HoldQuery) {
	if len(p.Holds) <= q.Limit {
		p.Next = ""
		return
	}
	p.Holds = p.Holds[:q.Limit]
	last := p.Holds[q.Limit-1]
	p.Next = holdfast.HoldCursor{CreatedAt: last.CreatedAt, CheckoutID: last.CheckoutID,
		ShopID: q.ShopID, ItemID: q.ItemID, LocationID: q.LocationID, Status: q.Status}.Encode()
}

// trimLedgerPage ends a page of q's ledger (q validated): the driver read
// q.Limit+1 entries, and the last one only says that there is a next page,
// whose cursor names q's key.
func trimLedgerPage(p *holdfast.LedgerPage, q holdfast.LedgerQuery) {
	if len(p.Entries) <= q.Limit {
		p.Next = ""
		return
	}
	p.Entries = p.Entries[:q.Limit]
	p.Next = holdfast.LedgerCursor{ID: p.Entries[q.Limit-1].ID, Key: q.Key}.Encode()
}
