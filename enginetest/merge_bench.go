package enginetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// BenchMerge measures a merge beside a plain reservation on engine e, one
// at a time: each iteration reserves a guest cart (timed: ns/reserve),
// reserves a customer cart (untimed), merges the guest's into the
// customer's (timed: ns/merge; "lines" lines each, one key shared so one
// line is summed) and releases the customer (untimed). Both timings meet
// the same load. Run by each engine's BenchmarkMerge.
func BenchMerge(b *testing.B, e holdfast.Engine) {
	ctx := ctxb()
	n := 1_000_000
	for item := int64(1); item <= 4; item++ {
		if _, err := e.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, Set: &n, Reason: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	for _, lines := range []int{1, 3} {
		guestLines := make([]holdfast.Line, lines)
		for i := range guestLines {
			guestLines[i] = holdfast.Line{ItemID: int64(i + 1), LocationID: 1, Quantity: 1}
		}
		custLines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
		name := map[int]string{1: "lines_1", 3: "lines_3"}[lines]
		b.Run(name, func(b *testing.B) {
			var reserve, merge time.Duration
			for b.Loop() {
				guest, customer := uuid.New(), uuid.New()
				t0 := time.Now()
				if _, err := e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: guest, Lines: guestLines}); err != nil {
					b.Fatal(err)
				}
				reserve += time.Since(t0)
				if _, err := e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: customer, Lines: custLines}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := e.MergeCheckouts(ctx, 1, guest, customer); err != nil {
					b.Fatal(err)
				}
				merge += time.Since(t1)
				if _, err := e.Release(ctx, 1, customer); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(reserve.Nanoseconds())/float64(b.N), "ns/reserve")
			b.ReportMetric(float64(merge.Nanoseconds())/float64(b.N), "ns/merge")
		})
	}
}
