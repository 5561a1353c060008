package migrations_test

import (
	"context"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestGroupedEventsAfterUpgrade (#29, migration 23): a database an older
// release created keeps one hold.created row per hold after the upgrade
// (processes of that release may still serve it, and they cannot read a
// grouped row) until EnableGroupedEvents; a database this release creates
// groups from the start. The feed is the same either way.
func TestGroupedEventsAfterUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	fresh := mysqltest.DB(t, 4)
	if on, err := migrations.GroupedEvents(ctx, fresh.DB); err != nil || !on {
		t.Fatalf("a database created by this release: grouped events %v (%v), want on", on, err)
	}

	d := mysqltest.EmptyDB(t, 40)
	if _, err := migrations.UpTo(ctx, d.DB, 22); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, d.DB); err != nil {
		t.Fatal(err)
	}
	if on, err := migrations.GroupedEvents(ctx, d.DB); err != nil || on {
		t.Fatalf("a database upgraded from 22: grouped events %v (%v), want off until enabled", on, err)
	}
	c, err := mysql.New(d.DB, holdfast.Config{Strategy: holdfast.StrategyBatch})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	two := 200
	if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &two, Reason: "stocktake"}); err != nil {
		t.Fatal(err)
	}
	counts := func() (rows, largest int) {
		t.Helper()
		if err := d.DB.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(n), 0) FROM holdfast_events WHERE type = 'hold.created'`).Scan(&rows, &largest); err != nil {
			t.Fatal(err)
		}
		return rows, largest
	}
	enginetest.ReserveConcurrently(t, c, k, 60)
	if rows, n := counts(); n != 1 || rows != 60 {
		t.Fatalf("before EnableGroupedEvents: %d hold.created rows, the largest covering %d holds; want 60 rows of one", rows, n)
	}
	if err := migrations.EnableGroupedEvents(ctx, d.DB); err != nil {
		t.Fatal(err)
	}
	enginetest.ReserveConcurrently(t, c, k, 60)
	if _, n := counts(); n < 2 {
		t.Fatalf("after EnableGroupedEvents no row covers more than %d hold", n)
	}
	created := enginetest.FeedHoldsCreated(t, c, 1)
	if created != 120 {
		t.Fatalf("%d hold.created events for 120 holds", created)
	}
}
