package httpapi

import (
	"context"

	"github.com/holdfast/holdfast"
)

// The ceiling engine answers the admin cancel and the audit log like every
// other route but Reserve: unavailable.

func (ceilingEngine) CancelHolds(context.Context, holdfast.CancelParams) (*holdfast.CancelResult, error) {
	return nil, holdfast.ErrUnavailable
}
func (ceilingEngine) Audit(context.Context, holdfast.AuditQuery) (*holdfast.AuditPage, error) {
	return nil, holdfast.ErrUnavailable
}
