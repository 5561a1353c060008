package engine

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// OrWait runs op (a claim, extend or edit of the checkout) and answers its
// ErrNotFound from the checkout's wait, as Hold does: ErrCheckoutWaiting
// while it waits (it holds nothing yet), how it ended once it ended
// without a hold (ErrWaitExpired, ErrWaitCancelled, ErrWaitUnservable); a
// wait granted meanwhile runs op once more (the hold is there now). A
// function, not a method, so it is no driver Client's method; the drivers'
// edits call it until that domain moves.
func OrWait[TTx comparable](c *Client[TTx], ctx context.Context, shop int64, checkout uuid.UUID, op func() (*holdfast.Hold, error)) (*holdfast.Hold, error) {
	var zero TTx
	for try := 0; ; try++ {
		h, err := op()
		if !errors.Is(err, holdfast.ErrNotFound) {
			return h, err
		}
		var werr error
		if rerr := c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
			werr = c.d.WaiterAnswer(ctx, tx, holdfast.RouteRead, shop, checkout)
			return nil
		}); rerr != nil {
			return nil, err
		}
		switch {
		case errors.Is(werr, driver.ErrGranted) && try == 0:
			continue
		case errors.Is(werr, holdfast.ErrWaitlisted):
			return nil, holdfast.ErrCheckoutWaiting
		case errors.Is(werr, holdfast.ErrWaitExpired), errors.Is(werr, holdfast.ErrWaitCancelled), errors.Is(werr, holdfast.ErrWaitUnservable):
			return nil, c.settleLapsed(ctx, werr)
		}
		return nil, err
	}
}

// settleLapsed ends, in a transaction of its own, the wait err reports past
// its end (a *driver.WaitLapsedError) as expired, and answers
// ErrWaitExpired; other errors pass through. A failure leaves it to the
// waitlist worker; the answer stays ErrWaitExpired.
func (c *Client[TTx]) settleLapsed(ctx context.Context, err error) error {
	var le *driver.WaitLapsedError
	if !errors.As(err, &le) {
		return err
	}
	var zero TTx
	_ = c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		return c.d.ExpireWait(ctx, tx, le.Shop, le.Checkout)
	})
	c.kickWaitlist()
	return holdfast.ErrWaitExpired
}
