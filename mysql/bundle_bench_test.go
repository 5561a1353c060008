package mysql_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// BenchmarkReserveBundle compares, one reservation at a time on counter
// keys with ample stock, a bundle of 3 components (expanded into 3 lines
// before the attempt) with a plain 1-line and a plain 3-line reservation
// of the same items, in a shop that has the bundle defined, and a plain
// 1-line reservation in a shop without bundles (the definitions cache's
// cost on the plain path): medians per kind, interleaved. Compare them as
// ratios on one machine.
func BenchmarkReserveBundle(b *testing.B) {
	ctx := context.Background()
	db := mysqltest.DB(b, 8)
	c, err := mysql.New(db.DB, holdfast.Config{Strategy: holdfast.StrategyCounter})
	if err != nil {
		b.Fatal(err)
	}
	for _, shop := range []int64{1, 2} {
		for item := int64(1); item <= 3; item++ {
			n := holdfast.AvailableMax
			if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: shop, ItemID: item, LocationID: 1}, Set: &n, Reason: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := c.SetBundle(ctx, holdfast.Bundle{ShopID: 1, ItemID: 100, Components: []holdfast.BundleComponent{{ItemID: 1, Quantity: 1}, {ItemID: 2, Quantity: 2}, {ItemID: 3, Quantity: 1}}}); err != nil {
		b.Fatal(err)
	}
	three := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 2}, {ItemID: 3, LocationID: 1, Quantity: 1}}
	kinds := []struct {
		name  string
		shop  int64
		lines []holdfast.Line
	}{
		{"plain1", 1, []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}},
		{"plain3", 1, three},
		{"bundle3", 1, []holdfast.Line{{ItemID: 100, LocationID: 1, Quantity: 1}}},
		{"plain1_nobundles", 2, []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}},
	}
	// Interleaved, each kind timed on its own, so that the machine's load
	// (shared cores) weighs on every kind alike; medians, as load spikes
	// skew means.
	took := make([][]time.Duration, len(kinds))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range kinds {
			tc := kinds[(i+j)%len(kinds)]
			start := time.Now()
			h, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: tc.shop, CheckoutID: uuid.New(), Lines: tc.lines})
			if err != nil {
				b.Fatal(err)
			}
			took[(i+j)%len(kinds)] = append(took[(i+j)%len(kinds)], time.Since(start))
			if want := max(len(tc.lines), 3*len(tc.lines)*int(tc.lines[0].ItemID/100)); len(h.Lines) != want {
				b.Fatalf("%s: hold lines %+v", tc.name, h.Lines)
			}
		}
	}
	for j, tc := range kinds {
		d := took[j]
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), "µs_p50_"+tc.name)
	}
}
