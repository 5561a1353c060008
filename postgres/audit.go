package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
)

// The audit log's and the admin cancel's statements
// (driver.Auditor; engine/audit.go, engine/cancel.go).

func (d *engineDriver) WriteAudit(ctx context.Context, tx pgx.Tx, r holdfast.AuditRecord) error {
	c := d.c()
	var key *int64
	if r.Actor.KeyID != 0 {
		key = &r.Actor.KeyID
	}
	_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteAdjust, "audit_insert"), r.ShopID, r.Action, key, r.Actor.Name(),
		r.Actor.Remote, r.Actor.RequestID, string(r.Detail), c.now())
	return err
}

func (d *engineDriver) ListAudit(ctx context.Context, tx pgx.Tx, q holdfast.AuditQuery, cur *holdfast.AuditCursor) ([]holdfast.AuditEntry, error) {
	var after *int64
	if cur != nil {
		after = &cur.ID
	}
	rows, err := tx.Query(ctx, d.c().q(ctx, holdfast.RouteRead, "audit_list"), q.ShopID, after, q.Action, q.KeyID, q.Limit+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []holdfast.AuditEntry
	for rows.Next() {
		var e holdfast.AuditEntry
		var detail string
		if err := rows.Scan(&e.ID, &e.ShopID, &e.Action, &e.KeyID, &e.Actor, &e.Remote, &e.RequestID, &detail, &e.CreatedAt); err != nil {
			return nil, err
		}
		e.Detail = []byte(detail)
		out = append(out, e)
	}
	return out, rows.Err()
}

func (d *engineDriver) PurgeAuditAttempt(ctx context.Context, tx pgx.Tx, retention time.Duration, limit int) (int, error) {
	c := d.c()
	tag, err := tx.Exec(ctx, c.q(ctx, holdfast.RoutePurge, "audit_purge"), c.now(), retention.Microseconds(), limit)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

func (d *engineDriver) ReadNow(ctx context.Context, tx pgx.Tx) (time.Time, error) {
	c := d.c()
	var now time.Time
	err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteRead, "db_now"), c.now()).Scan(&now)
	return now, err
}
