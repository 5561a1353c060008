package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// BenchmarkReserveBuyer compares one-unit reservations of a hot counter key
// without a buyer id (today's path) and with one on an item with a
// per-buyer limit (the plain path plus the tag, the buyer's lock and the
// count). Each buyer makes at most 4 reservations, like a shopper, so the
// count reads a few holds. Compare the two as a ratio on one machine.
func BenchmarkReserveBuyer(b *testing.B) {
	for _, withBuyer := range []bool{false, true} {
		name := "no_buyer"
		if withBuyer {
			name = "buyer"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			db := pgtest.DB(b, 40)
			c, err := postgres.New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyCounter})
			if err != nil {
				b.Fatal(err)
			}
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			if _, err := c.SetAvailable(ctx, k, holdfast.AvailableMax, "bench", ""); err != nil {
				b.Fatal(err)
			}
			if err := c.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: 1, ItemID: 1, Limit: 100}); err != nil {
				b.Fatal(err)
			}
			var goroutines atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				g := goroutines.Add(1)
				for i := 0; pb.Next(); i++ {
					p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1)}
					if withBuyer {
						p.BuyerID = fmt.Sprintf("g%d-%d", g, i/4)
					}
					if _, err := c.Reserve(ctx, p); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
