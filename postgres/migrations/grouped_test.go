package migrations_test

import (
	"context"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestGroupedEventsAfterUpgrade (#29, migration 28): a database an older
// release created keeps one hold.created row per hold after the upgrade
// (processes of that release may still serve it, and they cannot read a
// grouped row) until EnableGroupedEvents; a database this release creates
// groups from the start. The feed is the same either way.
func TestGroupedEventsAfterUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	fresh := pgtest.EmptyDB(t, 4)
	if _, err := migrations.Up(ctx, fresh.Pool); err != nil {
		t.Fatal(err)
	}
	if on, err := migrations.GroupedEvents(ctx, fresh.Pool); err != nil || !on {
		t.Fatalf("a database created by this release: grouped events %v (%v), want on", on, err)
	}

	db := pgtest.EmptyDB(t, 40)
	if _, err := migrations.UpTo(ctx, db.Pool, 27); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	if on, err := migrations.GroupedEvents(ctx, db.Pool); err != nil || on {
		t.Fatalf("a database upgraded from 27: grouped events %v (%v), want off until enabled", on, err)
	}
	c, err := postgres.New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyBatch})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 200, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	largest := func() int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT coalesce(max(n), 0) FROM holdfast_events WHERE type = 'hold.created'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	enginetest.ReserveConcurrently(t, c, k, 60)
	if n := largest(); n != 1 {
		t.Fatalf("before EnableGroupedEvents a row covers %d holds, want one row per hold", n)
	}
	if err := migrations.EnableGroupedEvents(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	enginetest.ReserveConcurrently(t, c, k, 60)
	if n := largest(); n < 2 {
		t.Fatalf("after EnableGroupedEvents no row covers more than %d hold", n)
	}
	created := enginetest.FeedHoldsCreated(t, c, 1)
	if created != 120 {
		t.Fatalf("%d hold.created events for 120 holds", created)
	}
}
