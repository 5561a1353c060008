package engine

import (
	"context"

	"github.com/holdfast/holdfast"
)

// audit writes the audit entry of action on shop by ctx's actor in tx, the
// transaction of the change it records: both commit, or neither.
func (c *Client[TTx]) audit(ctx context.Context, tx TTx, shop int64, action string, detail any) error {
	return c.d.WriteAudit(ctx, tx, holdfast.NewAuditRecord(ctx, shop, action, detail))
}

// Audit lists a page of a shop's audit log, newest first (see
// holdfast.AuditQuery and holdfast.AuditPage): every stock change, admin
// cancel and API key change, with who made it, when and from where. A
// rejected query is an *holdfast.ArgumentError and reads nothing.
func (c *Client[TTx]) Audit(ctx context.Context, q holdfast.AuditQuery) (*holdfast.AuditPage, error) {
	q, cur, err := q.Validate()
	if err != nil {
		return nil, err
	}
	var zero TTx
	var entries []holdfast.AuditEntry
	err = c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		entries, err = c.d.ListAudit(ctx, tx, q, cur)
		return err
	})
	if err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []holdfast.AuditEntry{}
	}
	page := &holdfast.AuditPage{Entries: entries}
	if len(entries) > q.Limit {
		page.Entries = entries[:q.Limit]
		page.Next = holdfast.AuditCursor{ID: page.Entries[q.Limit-1].ID, ShopID: q.ShopID, KeyID: q.KeyID, Action: q.Action}.Encode()
	}
	return page, nil
}

// PurgeAuditOnce deletes one batch (at most Config.SweepBatch) of the
// audit entries older than Config.AuditRetention and returns how many. The
// maintenance workers' purge runs it (PurgeOnce).
func (c *Client[TTx]) PurgeAuditOnce(ctx context.Context) (int, error) {
	var n int
	err := c.maintain(ctx, holdfast.RoutePurge, func(tx TTx) error {
		var err error
		n, err = c.d.PurgeAuditAttempt(ctx, tx, c.cfg.AuditRetention, c.cfg.SweepBatch)
		return err
	})
	return n, err
}
