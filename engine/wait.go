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

// endUnservableOn ends, in a transaction of its own right after a claim
// or stock change on keys committed, the waits on keys that now ask more
// than the key's available stock (issue 24 item 4): the waiters are told
// at once and the keys' free units sell again. A failure leaves them to
// the waitlist worker's next pass (kicked here either way), so the
// change's answer does not depend on it.
func (c *Client[TTx]) endUnservableOn(ctx context.Context, route string, keys []holdfast.Key) {
	defer c.kickWaitlist()
	var zero TTx
	_ = c.run(ctx, zero, true, route, true, func(tx TTx) error {
		_, err := c.d.EndUnservableWaits(ctx, tx, keys, nil)
		return err
	})
}

// cancelWait is Release's answer for a checkout without a hold (issue 24
// item 5): a wait still waiting ends as cancelled (the driver's
// CancelWait) and answers ErrWaitCancelled, as does a wait cancelled
// before; an ended wait answers how it ended; none, ErrNotFound. A wait
// granted since the hold was read, or still waiting after the cancel
// missed it, retries the release (which then releases the hold). answer is
// for the caller; err rolls tx back.
func (c *Client[TTx]) cancelWait(ctx context.Context, tx TTx, route string, shop int64, checkout uuid.UUID) (answer, err error) {
	cancelled, err := c.d.CancelWait(ctx, tx, route, shop, checkout)
	if err != nil {
		return nil, err
	}
	if cancelled {
		return holdfast.ErrWaitCancelled, nil
	}
	werr := c.d.WaiterAnswer(ctx, tx, route, shop, checkout)
	switch {
	case errors.Is(werr, driver.ErrGranted), errors.Is(werr, holdfast.ErrWaitlisted):
		return nil, driver.ErrRetry
	case errors.Is(werr, holdfast.ErrNotFound), IsWaitAnswer(werr):
		return werr, nil
	}
	return nil, werr
}

// waitOrNotFound answers a checkout without a hold from its wait, in tx:
// the hold a grant made (read again), the wait's answer, or ErrNotFound.
func (c *Client[TTx]) waitOrNotFound(ctx context.Context, tx TTx, route string, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	werr := c.d.WaiterAnswer(ctx, tx, route, shop, checkout)
	if errors.Is(werr, driver.ErrGranted) {
		return c.d.ReadHold(ctx, tx, route, shop, checkout)
	}
	return nil, werr
}
