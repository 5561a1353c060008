package shadow

import "context"

// ServeWaitlist implements holdfast.Engine: the waitlist exists on the
// holdfast side only (the legacy store has none), so the pass runs there.
// A reservation that asks to wait (ReserveParams.Wait) is passed to the
// holdfast side as it is; the legacy side answers it as a plain short
// reservation.
func (e *Engine) ServeWaitlist(ctx context.Context) (int, error) {
	return e.hf.ServeWaitlist(ctx)
}
