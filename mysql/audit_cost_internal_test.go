package mysql

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"database/sql"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestAuditCost measures what the audit entry adds to a stock change
// (issue #30 item 6): the same driver attempt (an adjustment of one key,
// in a transaction of the driver's own) without and with its audit entry,
// alternating in rounds so that both see the same load, one change at a
// time. It runs only with HOLDFAST_MEASURE=1 and reports median and mean
// latencies and their ratio; it asserts nothing about them.
//
//	HOLDFAST_MEASURE=1 go test -count=1 -run TestAuditCost -v ./mysql/
func TestAuditCost(t *testing.T) {
	if os.Getenv("HOLDFAST_MEASURE") == "" {
		t.Skip("set HOLDFAST_MEASURE=1 to measure")
	}
	db := mysqltest.DB(t, 4)
	c, err := New(db.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := (*engineDriver)(c)
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	n := 1000
	if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "stocktake"}); err != nil {
		t.Fatal(err)
	}
	change := func(audit bool, delta int) time.Duration {
		ch := holdfast.StockChange{Key: k, Delta: delta, Reason: "measure"}
		start := time.Now()
		err := d.Attempt(ctx, nil, true, holdfast.RouteAdjust, func(tx *sql.Tx) error {
			l, err := d.ChangeStockAttempt(ctx, tx, true, ch)
			if err != nil || !audit {
				return err
			}
			return d.WriteAudit(ctx, tx, holdfast.NewAuditRecord(ctx, k.ShopID, holdfast.AuditStockAdjust, stockDetailForCost(ch, l)))
		})
		if err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	const rounds, per = 20, 100
	var plain, audited []time.Duration
	for r := range rounds {
		for i := range per {
			delta := 1 - 2*(i%2) // +1, -1: the level stays put
			if r%2 == 0 {
				plain = append(plain, change(false, delta))
				audited = append(audited, change(true, delta))
			} else {
				audited = append(audited, change(true, delta))
				plain = append(plain, change(false, delta))
			}
		}
	}
	stat := func(ds []time.Duration) (median, mean time.Duration) {
		s := slices.Clone(ds)
		slices.Sort(s)
		var sum time.Duration
		for _, v := range s {
			sum += v
		}
		return s[len(s)/2], sum / time.Duration(len(s))
	}
	pm, pa := stat(plain)
	am, aa := stat(audited)
	t.Logf("stock change, %d each, alternating: without audit median %v mean %v; with audit median %v mean %v; ratio median %.2f mean %.2f",
		len(plain), pm, pa, am, aa, float64(am)/float64(pm), float64(aa)/float64(pa))
}

// stockDetailForCost is the engine's stock-change detail's shape.
func stockDetailForCost(ch holdfast.StockChange, l *holdfast.Level) map[string]any {
	return map[string]any{"item_id": ch.ItemID, "location_id": ch.LocationID, "reason": ch.Reason, "delta": ch.Delta, "available_after": l.Available}
}
