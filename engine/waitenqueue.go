package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// waitIfShort is Reserve's waitlist step: when p asks to wait and err is a
// short answer, it enqueues the checkout (or answers its existing wait) in
// a transaction of the driver's own: the checkout's hold, outcome or wait
// first (granted meanwhile, or another attempt of it holds or waits), then
// its keys' locks and what they have (driver.Enqueuer.WaitKeys), the
// decision whether the cart can wait, and the enqueue.
func (c *Client[TTx]) waitIfShort(ctx context.Context, p holdfast.ReserveParams, h *holdfast.Hold, err error) (*holdfast.Hold, error) {
	var ise *holdfast.InsufficientStockError
	if p.Wait <= 0 || !errors.As(err, &ise) {
		return h, err
	}
	req, verr := ValidateReserve(c.cfg, p)
	if verr != nil {
		return nil, verr
	}
	// The wait keeps its buyer (read before the transaction, as every
	// buyer hash is): the grant records it on the hold, so the buyer's
	// retry replays the hold and the hold counts towards its limits.
	if req.BuyerHash, verr = c.buyerHash(ctx, req); verr != nil {
		return nil, verr
	}
	const route = holdfast.RouteReserve
	start := time.Now()
	var out *holdfast.Hold
	var answer error
	var zero TTx
	runErr := c.run(ctx, zero, true, route, true, func(tx TTx) error {
		out, answer = nil, nil
		prev, err := c.d.ReserveExisting(ctx, tx, req)
		if !errors.Is(err, holdfast.ErrNotFound) {
			out = prev
			return err
		}
		kw, err := c.d.WaitKeys(ctx, tx, req)
		if err != nil {
			return err
		}
		if len(kw) != len(req.Lines) {
			return errors.New("holdfast: the waitlist's key read returned a row count unlike the cart's")
		}
		var short []holdfast.Line
		for _, s := range ise.Lines {
			i := slices.IndexFunc(req.Lines, func(l holdfast.Line) bool { return l.ItemID == s.ItemID && l.LocationID == s.LocationID })
			// Units can come back only where holds are outstanding (or
			// waiters ahead will release theirs), and a cart asking more
			// than the stock would block the queue for nothing.
			if i < 0 || (kw[i].Held == 0 && !kw[i].Waited) || req.Lines[i].Quantity > kw[i].Available {
				answer = ise
				return driver.ErrRollback
			}
			short = append(short, req.Lines[i])
		}
		if err := c.d.Enqueue(ctx, tx, req, short, ise.Lines, p.Wait); err != nil {
			return err
		}
		werr := c.d.WaiterAnswer(ctx, tx, route, req.Shop, req.Checkout)
		if !errors.Is(werr, holdfast.ErrWaitlisted) {
			return werr // a failed read: roll the wait back
		}
		answer = werr
		return nil
	})
	if runErr == nil && out == nil && errors.Is(answer, holdfast.ErrWaitlisted) {
		c.kickWaitlist()
	}
	err = cmp.Or(runErr, answer)
	c.observe(route, start, err, out)
	if err != nil {
		return nil, err
	}
	return out, nil
}
