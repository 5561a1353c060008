package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// BenchmarkReserveClaim is one checkout's reserve then claim of one unit of
// a counter key, one at a time: the plain path an edit must not slow down
// (compare with the same benchmark on the build before edits).
func BenchmarkReserveClaim(b *testing.B) {
	c, k := benchClient(b)
	ctx := context.Background()
	for b.Loop() {
		id := uuid.New()
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: 1, Quantity: 1}}}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Claim(ctx, 1, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEdit is one edit of a held checkout, growing and shrinking its
// line by one unit in turn: an edit's cost beside a reserve's.
func BenchmarkEdit(b *testing.B) {
	c, k := benchClient(b)
	ctx := context.Background()
	id := uuid.New()
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: 1, Quantity: 1}}}); err != nil {
		b.Fatal(err)
	}
	rev := int64(1)
	for b.Loop() {
		rev++
		q := 1 + int(rev%2)
		if _, err := c.Edit(ctx, holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: rev, Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: 1, Quantity: q}}}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchClient(b *testing.B) (*postgres.Client, holdfast.Key) {
	b.Helper()
	db := pgtest.DB(b, 0)
	c, err := postgres.New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyCounter})
	if err != nil {
		b.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 1}
	n := 1 << 30
	if _, err := c.ChangeStock(context.Background(), holdfast.StockChange{Key: k, Set: &n, Reason: "bench"}); err != nil {
		b.Fatal(err)
	}
	return c, k
}
