package enginetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// BenchStockSet measures a stock set without and with an expectation on
// engine e, one at a time on one key: "pair" is one plain set and one set
// expecting the value it has (applied), timed apart (ns/plain, ns/cas);
// "cas_refused" expects another value (refused, nothing written); and
// "import_20" is one import of 20 keys (ns/op per import). Run by each engine's
// BenchmarkStockSet.
func BenchStockSet(b *testing.B, e holdfast.Engine) {
	ctx := ctxb()
	k := holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 1}
	n := 1000
	if _, err := e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "bench"}); err != nil {
		b.Fatal(err)
	}
	// One plain set and one compare-and-set per iteration, each timed:
	// both meet the same load, which on a shared machine moves more than
	// the difference between them.
	b.Run("pair", func(b *testing.B) {
		var plain, cas time.Duration
		cur := 1000
		for b.Loop() {
			v := 2001 - cur
			t0 := time.Now()
			if _, err := e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &v, Reason: "bench"}); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			want, back := v, cur
			if _, err := e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &back, Reason: "bench", ExpectAvailable: &want}); err != nil {
				b.Fatal(err)
			}
			cas += time.Since(t1)
			plain += t1.Sub(t0)
		}
		b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "ns/plain")
		b.ReportMetric(float64(cas.Nanoseconds())/float64(b.N), "ns/cas")
	})
	cur := 1000
	b.Run("cas_refused", func(b *testing.B) {
		stale := cur + 7
		for b.Loop() {
			v := 5
			if _, err := e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &v, Reason: "bench", ExpectAvailable: &stale}); err == nil {
				b.Fatal("a stale expectation applied")
			}
		}
	})
	b.Run("import_20", func(b *testing.B) {
		run := 0
		prefix := uuid.NewString() // a new id per import across -count runs: never a replay
		for b.Loop() {
			run++
			im := holdfast.StockImport{ShopID: 2, ID: fmt.Sprintf("%s-%d", prefix, run), Reason: "bench", Entries: make([]holdfast.StockImportEntry, 20)}
			for j := range im.Entries {
				im.Entries[j] = holdfast.StockImportEntry{ItemID: int64(j + 1), LocationID: 1, Available: 10 + run%2}
			}
			if _, err := e.ImportStock(ctx, im); err != nil {
				b.Fatal(err)
			}
		}
	})
}
