package pgops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/holdfast/holdfast/health"
)

// The doctor's checks of holdfast's own state: the pool's fill (pool.fill),
// buyer-facing replenishment (replenish.inline) and the invariant.

func (d *doctor) poolFill(ctx context.Context) error {
	p, err := ReadPoolFill(ctx, d.pool, d.client.Config(), 10)
	if err != nil {
		return err
	}
	if p.Keys == 0 {
		d.add("pool.fill", health.SeverityOK, "no key uses the pool strategy", "", "")
		return nil
	}
	fill := 100.0
	if p.Wanted > 0 {
		fill = 100 * float64(p.Pooled) / float64(p.Wanted)
	}
	msg := fmt.Sprintf("%d pool keys, %.0f%% filled (%d of %d units); %d below the low-water mark with stock left, %d of them empty", p.Keys, fill, p.Pooled, p.Wanted, p.Low, p.Empty)
	if p.Empty == 0 {
		d.add("pool.fill", health.SeverityOK, msg, "", "")
		return nil
	}
	var keys []string
	for _, k := range p.LowKeys {
		keys = append(keys, fmt.Sprintf("%d/%d/%d pooled %d of cap %d (available %d, held %d)", k.ShopID, k.ItemID, k.LocationID, k.Pooled, k.PoolCap, k.Available, k.Held))
	}
	d.add("pool.fill", health.SeverityWarn, msg+"; least filled: "+strings.Join(keys, ", "),
		"an empty pool with stock left makes the next buyer refill it inline, under the key's lock, on the checkout path",
		"the background replenisher should top these up within its interval: check it is running (holdfast serve) and not failing in the logs; raise the pool cap of keys that drain between passes")
	return nil
}

func (d *doctor) inline(ctx context.Context) error {
	keys, total, err := InlineReplenished(ctx, d.pool, 10)
	if err != nil {
		return err
	}
	if total == 0 {
		d.add("replenish.inline", health.SeverityOK, "no key has been refilled inline on a buyer's reservation", "", "")
		return nil
	}
	var parts []string
	recent := false
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d/%d/%d ×%d (last %s)", k.ShopID, k.ItemID, k.LocationID, k.Count, k.Last.UTC().Format(time.RFC3339)))
		if time.Since(k.Last) < time.Hour {
			recent = true
		}
	}
	sev := health.SeverityOK
	if recent {
		sev = health.SeverityWarn
	}
	d.add("replenish.inline", sev, fmt.Sprintf("%d keys hit inline replenishment: %s", total, strings.Join(parts, ", ")),
		"their buffers ran dry between replenisher passes, so buyers refilled them on the checkout path, under the key's lock",
		"raise these keys' pool cap (SetStrategy) or shorten the replenish interval; a hot counter key is better served by the slots strategy")
	return nil
}

func (d *doctor) invariant(ctx context.Context) error {
	rep, err := d.client.CheckInvariant(ctx)
	if err != nil {
		return err
	}
	if !rep.OK() {
		d.add("invariant", health.SeverityCritical, rep.String(),
			"holdfast's safety invariant (pooled + held <= available per key, the ledger sums to available, holds match their lines) does not hold: units may be oversold",
			"stop writes to the affected keys, keep this report, and compare the keys' inventory_ledger with their holds; only holdfast may write its tables")
	} else {
		d.add("invariant", health.SeverityOK, fmt.Sprintf("invariant holds over %d keys", rep.Keys), "", "")
	}
	if len(rep.OverCommitted) > 0 {
		var parts []string
		for i, k := range rep.OverCommitted {
			if i == 10 {
				parts = append(parts, fmt.Sprintf("… %d more", len(rep.OverCommitted)-10))
				break
			}
			parts = append(parts, fmt.Sprintf("%d/%d/%d held %d > available %d", k.ShopID, k.ItemID, k.LocationID, k.Held, k.Available))
		}
		d.add("invariant.over_committed", health.SeverityWarn, fmt.Sprintf("%d over-committed keys: %s", len(rep.OverCommitted), strings.Join(parts, ", ")),
			"stock was reduced below what active holds already promised; nothing more is reserved on these keys, and some of their holds will fail to claim",
			"restock the keys, or let the holds expire or be released; decide which checkouts to cancel before their claims fail")
	}
	return nil
}
