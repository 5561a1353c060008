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

// CheckPreorderConvertPass checks an engine's conversion pass (convert,
// the maintenance worker's step): owed pre-orders of a key whose stock
// became sellable without a stock change (a lowered safety stock converts
// nothing by itself) are converted by one pass, oldest first, and a second
// pass finds nothing to do. e is a fresh engine.
func CheckPreorderConvertPass(t *testing.T, e holdfast.Engine, convert func(context.Context) (int, error)) {
	t.Helper()
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	two := 2
	if _, err := e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &two, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetSafetyStock(ctx, k, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetPreorder(ctx, holdfast.Preorder{Key: k, Cap: 5, ExpectedAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	if h, err := e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 2)}); err != nil || h.Lines[0].Preordered != 2 {
		t.Fatalf("reserve: %+v %v", h, err)
	}
	if _, err := e.Claim(ctx, 1, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetSafetyStock(ctx, k, 0); err != nil {
		t.Fatal(err)
	}
	if p, err := e.Preorder(ctx, k); err != nil || p.Owed != 2 {
		t.Fatalf("before the pass: %+v %v; want 2 owed", p, err)
	}
	if n, err := convert(ctx); err != nil || n != 2 {
		t.Fatalf("pass: %d %v; want 2 converted", n, err)
	}
	if n, err := convert(ctx); err != nil || n != 0 {
		t.Fatalf("second pass: %d %v; want nothing", n, err)
	}
	p, err := e.Preorder(ctx, k)
	l, lerr := e.Level(ctx, k)
	if err != nil || lerr != nil || p.Owed != 0 || l.Available != 0 {
		t.Fatalf("after the pass: %+v %+v %v %v; want nothing owed, 0 available", p, l, err, lerr)
	}
	if rep, err := e.CheckInvariant(ctx); err != nil || !rep.OK() {
		t.Fatalf("invariant: %v %v", rep, err)
	}
}
