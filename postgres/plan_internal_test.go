package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestReservePathStatementsRunGenericPlans: sellable.sql, refill.sql and
// availability.sql, run as the engine runs them (pgx's cached prepared statements, one key's
// arrays), settle on their cached generic plan after PostgreSQL's five
// custom ones instead of being planned on every call — planning them cost
// several times their run, and made every probe added to them (the drops
// one) cost planning too (docs/PERFORMANCE.md, "Costs of the commerce
// features"). pg_prepared_statements counts each statement's plans.
func TestReservePathStatementsRunGenericPlans(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 2)
	c, err := New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 20, "test", ""); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	const calls = 12
	sellable := c.q(ctx, holdfast.RouteReserve, "sellable")
	refill := c.q(ctx, holdfast.RouteReplenish, "refill")
	avail := c.q(ctx, holdfast.RouteRead, "availability")
	for i := range calls {
		items := []int64{int64(1 + i%3)} // a different array each call, as carts are
		if _, err := conn.Exec(ctx, sellable, int64(1), items, []int64{1}); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, avail, int64(1), items, []int64{1}); err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, refill, []int64{1}, items, []int64{1}, string(holdfast.StrategyCounter), 100, 4, batchStripes)
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{"sellable": sellable, "refill": refill, "availability": avail} {
		var generic, custom int64
		if err := conn.QueryRow(ctx, "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", text).Scan(&generic, &custom); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if custom > 5 || generic < calls-5 {
			t.Errorf("%s.sql: %d custom plans and %d generic ones in %d calls; want at most PostgreSQL's first 5 custom, the rest generic", name, custom, generic, calls)
		}
	}
}

// TestBatchStatementsRunGenericPlans: batch_lock.sql and batch_reserve.sql,
// the combined batch's two statements, run as the engine runs them (pgx's
// cached prepared statements, a batch of a different size each call) settle
// on their cached generic plan after PostgreSQL's five custom ones: planning
// batch_reserve.sql's CTEs on every batch was a per-batch cost the batch's
// holds shared (docs/PERFORMANCE.md, "The re-thought PostgreSQL batch").
func TestBatchStatementsRunGenericPlans(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 2)
	c, err := New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyBatch})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 100000, "test", ""); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	const calls = 12
	lock := c.q(ctx, holdfast.RouteReserve, "batch_lock")
	reserve := c.q(ctx, holdfast.RouteReserve, "batch_reserve")
	for i := range calls {
		n := []int{1, 40, 8, 64}[i%4] // a different batch size each call, as batches are
		var ids []string
		var qtys []int32
		var ttls, shops, items, locs []int64
		for range n {
			ids, qtys, ttls = append(ids, uuid.NewString()), append(qtys, 1), append(ttls, time.Minute.Microseconds())
			shops, items, locs = append(shops, 1), append(items, 1), append(locs, 1)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The key shallow every other call (its every row locked and taken
		// from), else deep (its stripe's row).
		shallow := i%2 == 0
		var sShops, sItems, sLocs []int64
		if shallow {
			sShops, sItems, sLocs = shops[:1], items[:1], locs[:1]
		}
		if _, err := tx.Exec(ctx, lock, shops[:1], items[:1], locs[:1], i%batchStripes, []bool{shallow}); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, reserve, ids, qtys, ttls, shops, items, locs, time.Hour.Microseconds(), c.now(), i%batchStripes, sShops, sItems, sLocs)
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{"batch_lock": lock, "batch_reserve": reserve} {
		var generic, custom int64
		if err := conn.QueryRow(ctx, "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", text).Scan(&generic, &custom); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if custom > 5 || generic < calls-5 {
			t.Errorf("%s.sql: %d custom plans and %d generic ones in %d calls; want at most PostgreSQL's first 5 custom, the rest generic", name, custom, generic, calls)
		}
	}
}
