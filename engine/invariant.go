package engine

import (
	"context"

	"github.com/holdfast/holdfast"
)

// CheckInvariant checks the whole database, from one snapshot, for the
// invariant holdfast guarantees: for every key, pooled + held <= available
// (or, after a stock reduction, an empty buffer), the audit trail sums to
// available, and holds and their lines agree. Tests run it after every
// concurrent test; operators run it through `holdfast doctor`. A read:
// after a lost connection or a retryable failure it runs again, under the
// engine's retry policy.
func (c *Client[TTx]) CheckInvariant(ctx context.Context) (*holdfast.InvariantReport, error) {
	r := c.core.NewRetrier(holdfast.RouteRead)
	for {
		rep, err := c.d.ReadInvariant(ctx)
		if err == nil {
			var accts []holdfast.PreorderAccount
			if accts, err = c.d.ReadPreorderAccounts(ctx); err == nil {
				for _, a := range accts {
					if !holdfast.PreorderBalanced(a) {
						rep.Preorders = append(rep.Preorders, a)
					}
				}
				return rep, nil
			}
		}
		if again, berr := r.Again(ctx, err, c.core.cls.ConnectionLost(err) || c.core.cls.Retryable(err)); !again {
			if berr != nil {
				return nil, berr
			}
			return rep, err
		}
	}
}
