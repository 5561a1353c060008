package shadow

import (
	"context"

	"github.com/holdfast/holdfast"
)

// errNoWaitlist refuses ReserveParams.Wait: the legacy store has no
// waitlist, and a wait queued on the holdfast side alone would make the
// two sides disagree about who gets returning units. Nothing is written.
var errNoWaitlist = &holdfast.ArgumentError{Field: "wait", Reason: "the shadow layer does not offer the waitlist; reserve without waiting"}

// ServeWaitlist implements holdfast.Engine on the holdfast side only (the
// legacy store has no waitlist). Through the shadow layer no checkout
// waits (Reserve refuses Wait), so a pass finds only waits queued on the
// holdfast engine directly.
func (e *Engine) ServeWaitlist(ctx context.Context) (int, error) {
	return e.hf.ServeWaitlist(ctx)
}
