package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// BenchmarkReserveSoldOut is one reservation of a sold-out key, answered by
// the sold-out hint (sold_out_inflight.sql, sold_out.sql): what a flash
// sale's late buyers cost once the key is gone.
func BenchmarkReserveSoldOut(b *testing.B) {
	db := pgtest.DB(b, 0)
	c, err := postgres.New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyCounter})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 1}
	n := 0
	if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "bench"}); err != nil {
		b.Fatal(err)
	}
	lines := []holdfast.Line{{ItemID: k.ItemID, LocationID: 1, Quantity: 1}}
	for b.Loop() {
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: lines}); !errors.Is(err, holdfast.ErrInsufficientStock) {
			b.Fatal(err)
		}
	}
}
