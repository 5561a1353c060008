package hotbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// AvailHolds is how many one-unit holds the avail scenario places on the
// hot key before it measures: an availability read counts a key's active
// holds (on MySQL it sums their lines), so it is measured with some.
const AvailHolds = 100

// runAvail measures availability reads of key (one item at one location,
// as a product page asks) by clients, on eng with AvailHolds holds on the
// key, then audits: the reads changed nothing, and every read answered
// what the key has left.
func (r *runner) runAvail(ctx context.Context, eng holdfast.Engine, key holdfast.Key, strategy string, clients int) (*Result, error) {
	lines := []holdfast.Line{{ItemID: key.ItemID, LocationID: key.LocationID, Quantity: 1}}
	for range AvailHolds {
		if _, err := eng.Reserve(ctx, holdfast.ReserveParams{ShopID: key.ShopID, CheckoutID: uuid.New(), Lines: lines, TTL: time.Hour}); err != nil {
			return nil, fmt.Errorf("hotbench: avail setup: %w", err)
		}
	}
	want := r.o.HotStock - AvailHolds
	q := holdfast.AvailabilityQuery{ShopID: key.ShopID, Items: []int64{key.ItemID}, Locations: []int64{key.LocationID}}
	errWrong := errors.New("wrong availability")
	do := func(ctx context.Context) error {
		a, err := eng.Availability(ctx, q)
		if err != nil {
			return err
		}
		if a.Items[0].Sellable != want {
			return fmt.Errorf("%w: %d, want %d", errWrong, a.Items[0].Sellable, want)
		}
		return nil
	}
	res := &Result{Scenario: ScenarioAvail, Strategy: strategy, Clients: clients}
	m := r.timed(ctx, fmt.Sprintf("%-10s %-8s c=%-3d", strategy, ScenarioAvail, clients), clients, 1, do)
	m.fill(res, r.o.Duration)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := eng.Stop(stopCtx); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	inv, err := eng.CheckInvariant(stopCtx)
	if err != nil {
		return nil, err
	}
	if !inv.OK() {
		res.Oversold = max(1, len(inv.Violations))
		res.Problem = inv.String()
	}
	lvl, err := eng.Level(stopCtx, key)
	if err != nil {
		return nil, err
	}
	if lvl.Held != AvailHolds || lvl.Available != r.o.HotStock {
		res.Problem = strings.TrimSpace(res.Problem + fmt.Sprintf(" audit: after reads, %d available and %d held; want %d and %d", lvl.Available, lvl.Held, r.o.HotStock, AvailHolds))
	}
	if res.Errors > 0 {
		res.Problem = strings.TrimSpace(res.Problem + fmt.Sprintf(" %d reads failed or answered wrong: %v", res.Errors, res.ErrorKinds))
	}
	return res, nil
}

// writeAvail prints, for every clients and strategy that ran both hot and
// avail, availability reads/s against reservations/s (issue #30's target:
// at least 10×).
func (rep *Report) writeAvail(w io.Writer) {
	hot := map[[2]any]*Result{}
	for _, r := range rep.Results {
		if r.Scenario == ScenarioHot {
			hot[[2]any{r.Strategy, r.Clients}] = r
		}
	}
	for _, r := range rep.Results {
		h := hot[[2]any{r.Strategy, r.Clients}]
		if r.Scenario != ScenarioAvail || h == nil || h.HoldsPerSec <= 0 {
			continue
		}
		fmt.Fprintf(w, "availability vs reserve, %s at %d clients: %.0f reads/s ÷ %.0f holds/s = %.1f×\n",
			r.Strategy, r.Clients, r.HoldsPerSec, h.HoldsPerSec, r.HoldsPerSec/h.HoldsPerSec)
	}
}
