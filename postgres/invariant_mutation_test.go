package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// Mutation tests of CheckInvariant: a real database in a healthy state is
// corrupted one way at a time, as a bug in the engine (or a hand edit)
// would leave it, and the check must report each corruption — a checker
// that always says "OK" fails here.

// corruptible is a database with a counter key and a pool key, a one-line
// hold, a two-line hold across both keys and a claimed checkout.
type corruptible struct {
	db             *pgtest.Database
	c              *postgres.Client
	counter, pool  holdfast.Key
	single, double uuid.UUID
}

func newCorruptible(t *testing.T) *corruptible {
	t.Helper()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	c, err := postgres.New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyCounter})
	if err != nil {
		t.Fatal(err)
	}
	x := &corruptible{db: db, c: c,
		counter: holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1},
		pool:    holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1},
		single:  uuid.New(), double: uuid.New()}
	if _, err := c.SetAvailable(ctx, x.counter, 10, "stock", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetAvailable(ctx, x.pool, 10, "stock", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetStrategy(ctx, x.pool, holdfast.StrategyPool, 6); err != nil {
		t.Fatal(err)
	}
	for _, r := range []holdfast.ReserveParams{
		{ShopID: 1, CheckoutID: x.single, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}},
		{ShopID: 1, CheckoutID: x.double, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 3}}},
	} {
		if _, err := c.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	claimed := uuid.New()
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: claimed, Lines: []holdfast.Line{{ItemID: 2, LocationID: 1, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, 1, claimed); err != nil {
		t.Fatal(err)
	}
	return x
}

func (x *corruptible) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	tag, err := x.db.Pool.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if tag.RowsAffected() == 0 && !strings.HasPrefix(sql, "ALTER") && !strings.HasPrefix(sql, "BEGIN") {
		t.Fatalf("%s: changed nothing", sql)
	}
}

// Corruptions are the defects the invariant check must report, each with
// what the report must say about it.
var corruptions = []struct {
	name    string
	corrupt func(t *testing.T, x *corruptible)
	want    func(x *corruptible, rep *holdfast.InvariantReport) bool
}{{
	name: "extra buffer units on a counter key",
	corrupt: func(t *testing.T, x *corruptible) {
		x.exec(t, "UPDATE inventory_counters SET units = units + 3 WHERE inventory_item_id = 1 AND slot = 0")
	},
	want: func(x *corruptible, rep *holdfast.InvariantReport) bool { return violates(rep, x.counter) },
}, {
	name: "extra buffer units on a pool key",
	corrupt: func(t *testing.T, x *corruptible) {
		x.exec(t, "INSERT INTO reservation_units (shop_id, inventory_item_id, location_id) SELECT 1, 2, 1 FROM generate_series(1, 10)")
	},
	want: func(x *corruptible, rep *holdfast.InvariantReport) bool { return violates(rep, x.pool) },
}, {
	name: "a deleted hold line",
	corrupt: func(t *testing.T, x *corruptible) {
		x.exec(t, "DELETE FROM reserved_quantities WHERE checkout_id = $1 AND inventory_item_id = 2", x.double)
	},
	want: func(x *corruptible, rep *holdfast.InvariantReport) bool { return defect(rep, x.double) },
}, {
	name: "a hold row without lines",
	corrupt: func(t *testing.T, x *corruptible) {
		x.exec(t, "DELETE FROM reserved_quantities WHERE checkout_id = $1", x.single)
	},
	want: func(x *corruptible, rep *holdfast.InvariantReport) bool { return defect(rep, x.single) },
}, {
	name: "a hold line whose hold is gone",
	corrupt: func(t *testing.T, x *corruptible) {
		x.exec(t, "UPDATE holds SET status = 'released', ended_at = now() WHERE checkout_id = $1", x.single)
	},
	want: func(x *corruptible, rep *holdfast.InvariantReport) bool { return defect(rep, x.single) },
}, {
	name: "a missing ledger row",
	corrupt: func(t *testing.T, x *corruptible) {
		// The ledger is append-only (a trigger refuses deletes): the
		// corruption goes around it, as a restore from a partial dump would.
		x.exec(t, "ALTER TABLE inventory_ledger DISABLE TRIGGER inventory_ledger_append_only")
		x.exec(t, "DELETE FROM inventory_ledger WHERE id = (SELECT max(id) FROM inventory_ledger WHERE inventory_item_id = 2)")
		x.exec(t, "ALTER TABLE inventory_ledger ENABLE TRIGGER inventory_ledger_append_only")
	},
	want: func(x *corruptible, rep *holdfast.InvariantReport) bool {
		return slices.ContainsFunc(rep.Violations, func(a holdfast.KeyAccount) bool {
			return a.Key == x.pool && a.LedgerSum != a.Available
		})
	},
}}

func violates(rep *holdfast.InvariantReport, k holdfast.Key) bool {
	return slices.ContainsFunc(rep.Violations, func(a holdfast.KeyAccount) bool {
		return a.Key == k && a.Pooled+a.Held > a.Available
	})
}

func defect(rep *holdfast.InvariantReport, co uuid.UUID) bool {
	return slices.ContainsFunc(rep.Defects, func(d string) bool { return strings.Contains(d, co.String()) })
}

func TestInvariantCatchesCorruption(t *testing.T) {
	t.Parallel()
	for _, m := range corruptions {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			x := newCorruptible(t)
			rep, err := x.c.CheckInvariant(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Fatalf("the healthy database already fails: %s", rep)
			}
			m.corrupt(t, x)
			rep, err = x.c.CheckInvariant(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || !m.want(x, rep) {
				t.Fatalf("corruption %q not reported as it should be: %s", m.name, describe(rep))
			}
			t.Logf("reported: %s", rep)
		})
	}
}

func describe(rep *holdfast.InvariantReport) string {
	return fmt.Sprintf("%s (over-committed: %+v)", rep, rep.OverCommitted)
}
