package enginetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// BenchReservePreorder compares, one reservation at a time, a one-unit
// reservation that is pre-ordered whole (a key with no stock and a cap: the
// plain attempt comes back short, the settings are read, the split cart is
// reserved) with a plain one-unit reservation from stock, on a key without
// a cap and on a key with a cap whose stock covers it: medians per kind,
// interleaved so that the machine's load weighs on each alike. Compare
// them as ratios on one machine. e is a fresh engine on counter keys.
func BenchReservePreorder(b *testing.B, e holdfast.Engine) {
	ctx := context.Background()
	const shop = 1
	big := holdfast.AvailableMax
	zero := 0
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for item, avail := range map[int64]*int{1: &big, 2: &zero, 3: &big} {
		k := holdfast.Key{ShopID: shop, ItemID: item, LocationID: 1}
		if _, err := e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: avail, Reason: "bench"}); err != nil {
			b.Fatal(err)
		}
		if item > 1 {
			if _, err := e.SetPreorder(ctx, holdfast.Preorder{Key: k, Cap: holdfast.PreorderCapMax, ExpectedAt: at}); err != nil {
				b.Fatal(err)
			}
		}
	}
	kinds := []struct {
		name string
		item int64
		pre  int
	}{{"plain", 1, 0}, {"preorder", 2, 1}, {"plain_capped", 3, 0}}
	took := make([][]time.Duration, len(kinds))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range kinds {
			n := (i + j) % len(kinds)
			tc := kinds[n]
			start := time.Now()
			h, err := e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: one(tc.item, 1)})
			if err != nil {
				b.Fatal(err)
			}
			took[n] = append(took[n], time.Since(start))
			if len(h.Lines) != 1 || h.Lines[0].Preordered != tc.pre {
				b.Fatalf("%s: hold lines %+v", tc.name, h.Lines)
			}
		}
	}
	b.StopTimer()
	for j, tc := range kinds {
		d := took[j]
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), "µs_p50_"+tc.name)
	}
}
