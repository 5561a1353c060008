package pgops_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestDoctorCatchesCorruption: `holdfast doctor` (pgops.Doctor, run
// in-process as the command runs it) reports each corruption of a healthy
// database as a critical invariant finding that names what is wrong, and
// reports the healthy database as OK first.
func TestDoctorCatchesCorruption(t *testing.T) {
	t.Parallel()
	type fixture struct {
		db             *pgtest.Database
		c              *postgres.Client
		single, double uuid.UUID
	}
	setup := func(t *testing.T) fixture {
		ctx := context.Background()
		db := pgtest.DB(t, 4)
		c, err := postgres.New(db.Pool, holdfast.Config{Strategy: holdfast.StrategyCounter})
		if err != nil {
			t.Fatal(err)
		}
		f := fixture{db: db, c: c, single: uuid.New(), double: uuid.New()}
		for _, item := range []int64{1, 2} {
			if _, err := c.SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, 10, "stock", ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.SetStrategy(ctx, holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}, holdfast.StrategyPool, 6); err != nil {
			t.Fatal(err)
		}
		for _, r := range []holdfast.ReserveParams{
			{ShopID: 1, CheckoutID: f.single, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}},
			{ShopID: 1, CheckoutID: f.double, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 3}}},
		} {
			if _, err := c.Reserve(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		return f
	}
	cases := []struct {
		name string
		sql  []string
		want func(f fixture) string // text the finding must contain
	}{
		{"extra buffer units on a counter key",
			[]string{"UPDATE inventory_counters SET units = units + 3 WHERE inventory_item_id = 1 AND slot = 0"},
			func(fixture) string { return "violation {Key:{ShopID:1 ItemID:1 LocationID:1}" }},
		{"extra buffer units on a pool key",
			[]string{"INSERT INTO reservation_units (shop_id, inventory_item_id, location_id) SELECT 1, 2, 1 FROM generate_series(1, 10)"},
			func(fixture) string { return "violation {Key:{ShopID:1 ItemID:2 LocationID:1}" }},
		{"a deleted hold line",
			[]string{"DELETE FROM reserved_quantities WHERE checkout_id = '%s' AND inventory_item_id = 2"},
			func(f fixture) string { return f.double.String() }},
		{"a hold row without lines",
			[]string{"DELETE FROM reserved_quantities WHERE checkout_id = '%s'"},
			func(f fixture) string { return f.single.String() }},
		{"a missing ledger row",
			[]string{
				"ALTER TABLE inventory_ledger DISABLE TRIGGER inventory_ledger_append_only",
				"DELETE FROM inventory_ledger WHERE id = (SELECT max(id) FROM inventory_ledger WHERE inventory_item_id = 2)",
				"ALTER TABLE inventory_ledger ENABLE TRIGGER inventory_ledger_append_only",
			},
			func(fixture) string { return "violation {Key:{ShopID:1 ItemID:2 LocationID:1}" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			if got := one(t, doctor(t, f.db.Pool, pgops.DoctorConfig{Engine: f.c}), "invariant"); got.Severity != health.SeverityOK {
				t.Fatalf("healthy database: %+v", got)
			}
			for _, sql := range tc.sql {
				if strings.Contains(sql, "%s") {
					co := f.single
					if strings.Contains(tc.name, "deleted hold line") {
						co = f.double
					}
					sql = strings.Replace(sql, "%s", co.String(), 1)
				}
				if _, err := f.db.Pool.Exec(context.Background(), sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			rep := doctor(t, f.db.Pool, pgops.DoctorConfig{Engine: f.c})
			got := one(t, rep, "invariant")
			if got.Severity != health.SeverityCritical || rep.Worst() != health.SeverityCritical {
				t.Fatalf("corruption %q: invariant finding %s, worst %s; want critical:\n%s", tc.name, got.Severity, rep.Worst(), rep.Text())
			}
			if want := tc.want(f); !strings.Contains(got.Message, want) {
				t.Fatalf("corruption %q: the finding does not name it (%q): %s", tc.name, want, got.Message)
			}
		})
	}
}
