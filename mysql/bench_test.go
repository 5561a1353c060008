package mysql_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// BenchmarkReserveHot: one-line reservations of one hot key from 64
// goroutines, per strategy. Compare strategies within one run
// (go test -run '^$' -bench ReserveHot -benchtime 2s ./mysql/).
func BenchmarkReserveHot(b *testing.B) {
	for _, s := range []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyBatch, holdfast.StrategyPool} {
		b.Run(string(s), func(b *testing.B) {
			db := mysqltest.DB(b, 64)
			c, err := mysql.New(db.DB, holdfast.Config{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			n := 100_000_000
			if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "bench"}); err != nil {
				b.Fatal(err)
			}
			if _, err := c.SetStrategy(ctx, k, s, 0); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(32) // 64 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if rep, err := c.CheckInvariant(ctx); err != nil || !rep.OK() {
				b.Fatalf("invariant: %v %v", rep, err)
			}
		})
	}
}
