package pgmove_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestGuardCost measures what the placement guard (migration 15's row
// trigger on every shop table) costs a reserve+release cycle: blocks of
// cycles alternating with the guard's triggers enabled and disabled, on
// one database. HOLDFAST_GUARD_COST=1 (a measurement, not a check: the
// machine's noise decides the figure).
func TestGuardCost(t *testing.T) {
	if os.Getenv("HOLDFAST_GUARD_COST") == "" {
		t.Skip("HOLDFAST_GUARD_COST=1 measures the guard's cost")
	}
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := 1_000_000
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	setGuard := func(on bool) {
		verb := "DISABLE"
		if on {
			verb = "ENABLE"
		}
		if _, err := db.Pool.Exec(ctx, `DO $$ DECLARE t text; n text; BEGIN
			FOR t, n IN SELECT c.relname, g.tgname FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
			         WHERE g.tgname IN ('holdfast_shop_guard', 'holdfast_shop_guard_insert') AND NOT c.relispartition AND c.relnamespace = current_schema()::regnamespace LOOP
				EXECUTE format('ALTER TABLE %I `+verb+` TRIGGER %I', t, n);
			END LOOP; END $$`); err != nil {
			t.Fatal(err)
		}
	}
	const block, blocks = 200, 10
	var sum [2]time.Duration
	for i := range 2 * blocks {
		on := i%2 == 0
		if (i/2)%2 == 1 {
			on = !on // which goes first alternates
		}
		setGuard(on)
		start := time.Now()
		for range block {
			id := uuid.New()
			if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}, TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Release(ctx, 1, id); err != nil {
				t.Fatal(err)
			}
		}
		idx := 0
		if on {
			idx = 1
		}
		sum[idx] += time.Since(start)
	}
	off, on := sum[0]/(blocks*block), sum[1]/(blocks*block)
	t.Logf("GUARD reserve+release cycle: without the guard %v, with it %v (ratio %.3f), %d cycles each", off, on, float64(on)/float64(off), blocks*block)
}
