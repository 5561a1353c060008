package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// BenchmarkNoWaiters is a reservation and its release on a key without
// waiters, one after another, with the maintenance workers running: the
// path the waitlist must leave as it was (its costs there are the mark's
// EXISTS in the release's refill and one probe by the waitlist worker per
// burst of releases). Compare it with the same benchmark on the tree
// before the waitlist (docs/PERFORMANCE.md has the ratio and the command).
func BenchmarkNoWaiters(b *testing.B) {
	db := pgtest.DB(b, 0)
	c, err := postgres.New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyCounter})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 1000, "stock", ""); err != nil {
		b.Fatal(err)
	}
	c.Start(ctx)
	defer c.Stop(ctx) //nolint:errcheck
	lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
	b.ResetTimer()
	for range b.N {
		id := uuid.New()
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: lines}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Release(ctx, 1, id); err != nil {
			b.Fatal(err)
		}
	}
}
