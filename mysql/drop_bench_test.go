package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// BenchmarkDropEntry compares a plain one-unit reservation with a buyer id
// (a key without a drop: a hold) and a drop entry (the same reservation on
// a key whose drop window is open: the short take, the drop lookup, the
// entry and its wait). One goroutine, so the ratio is the cost of one call
// on one machine, not contention:
//
//	go test -run '^$' -bench BenchmarkDropEntry -benchtime 2000x ./mysql/
func BenchmarkDropEntry(b *testing.B) {
	for _, drop := range []bool{false, true} {
		name := "plain"
		if drop {
			name = "drop_entry"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			db := mysqltest.DB(b, 8)
			c, err := mysql.New(db.DB, holdfast.Config{})
			if err != nil {
				b.Fatal(err)
			}
			// A drop takes at most DropEntrantsMax entrants: a fresh key
			// (and drop) every 4000 entries.
			const perKey = 4000
			keys := b.N/perKey + 1
			for i := range keys {
				k := holdfast.Key{ShopID: 1, ItemID: int64(i + 1), LocationID: 1}
				n := holdfast.AvailableMax
				if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "bench"}); err != nil {
					b.Fatal(err)
				}
				if drop {
					if _, err := c.SetDrop(ctx, holdfast.DropParams{Key: k, Window: time.Hour}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), BuyerID: fmt.Sprintf("b%d", i),
					Lines: []holdfast.Line{{ItemID: int64(i/perKey + 1), LocationID: 1, Quantity: 1}}}
				_, err := c.Reserve(ctx, p)
				if drop && !dropWaitlisted(err) || !drop && err != nil {
					b.Fatalf("reserve %d: %v", i, err)
				}
			}
		})
	}
}

func dropWaitlisted(err error) bool {
	_, ok := err.(*holdfast.WaitlistedError)
	return ok
}
