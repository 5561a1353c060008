package driver

import (
	"context"
	"time"

	"github.com/holdfast/holdfast"
)

// Auditor is the database side of the audit log and of the admin cancel
// (engine/audit.go, engine/cancel.go).
type Auditor[TTx comparable] interface {
	// WriteAudit inserts r in tx, stamped with the database's now (the
	// injected clock when the client has one).
	WriteAudit(ctx context.Context, tx TTx, r holdfast.AuditRecord) error
	// ListAudit reads q's entries after cur (nil: from the newest), newest
	// first, at most q.Limit+1 of them (the engine trims the page).
	ListAudit(ctx context.Context, tx TTx, q holdfast.AuditQuery, cur *holdfast.AuditCursor) ([]holdfast.AuditEntry, error)
	// PurgeAuditAttempt deletes at most limit entries older than
	// retention, answering how many.
	PurgeAuditAttempt(ctx context.Context, tx TTx, retention time.Duration, limit int) (int, error)
	// ReadNow reads the database's now (the injected clock when the
	// client has one).
	ReadNow(ctx context.Context, tx TTx) (time.Time, error)
}
