package shadow

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/legacy"
)

// MergeCheckouts implements holdfast.Engine. A legacy store has no merge,
// so only a shop whose truth is holdfast (modes primary and holdfast) can
// merge: the merge goes to holdfast alone (in mode primary the legacy keeps
// both carts' holds until they end there; the comparison reports the
// difference). In the other modes the answer wraps legacy.ErrUnsupported
// and nothing changes.
func (e *Engine) MergeCheckouts(ctx context.Context, shop int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	if m := e.bind(shop).mode; m != ModePrimary && m != ModeHoldfast {
		return nil, fmt.Errorf("shadow: merging checkouts needs holdfast as the shop's truth (mode %s): %w", m, legacy.ErrUnsupported)
	}
	return e.hf.MergeCheckouts(ctx, shop, from, into)
}
