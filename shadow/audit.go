package shadow

import (
	"context"

	"github.com/holdfast/holdfast"
)

// CancelHolds implements holdfast.Engine on the holdfast side only,
// whatever the shop's mode, as the listings do: the legacy store has no
// admin cancel, and the holds an admin lists (Holds) are holdfast's.
func (e *Engine) CancelHolds(ctx context.Context, p holdfast.CancelParams) (*holdfast.CancelResult, error) {
	return e.hf.CancelHolds(ctx, p)
}

// Audit implements holdfast.Engine from the holdfast side only (the legacy
// store keeps no audit log).
func (e *Engine) Audit(ctx context.Context, q holdfast.AuditQuery) (*holdfast.AuditPage, error) {
	return e.hf.Audit(ctx, q)
}
