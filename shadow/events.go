package shadow

import (
	"context"

	"github.com/holdfast/holdfast"
)

// Events implements holdfast.Engine: the feed is holdfast's only (the
// legacy store has no events), whatever the shop's mode. In legacy and
// shadow modes it reports what holdfast was asked, not the legacy truth.
func (e *Engine) Events(ctx context.Context, shopID int64, after int64, limit int) ([]holdfast.Event, error) {
	return e.hf.Events(ctx, shopID, after, limit)
}
