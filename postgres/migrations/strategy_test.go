package migrations_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestStrategiesMatchSchema: the schema's CHECK on inventory_levels.strategy
// accepts every strategy of holdfast.Strategies (the list validation, flag
// help, the bench and the demo read) and nothing else, so a strategy added
// to one and not the other fails here.
func TestStrategiesMatchSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.EmptyDB(t, 2)
	ctx := context.Background()
	if _, err := migrations.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	insert := func(item int, s string) error {
		_, err := db.Pool.Exec(ctx, `INSERT INTO inventory_levels (shop_id, inventory_item_id, location_id, available, strategy) VALUES (1, $1, 1, 0, $2)`, item, s)
		return err
	}
	for i, s := range holdfast.Strategies() {
		if !s.Valid() {
			t.Errorf("holdfast.Strategies lists %q, which is not Valid", s)
		}
		if err := insert(i+1, string(s)); err != nil {
			t.Errorf("the schema refuses strategy %q: %v", s, err)
		}
	}
	var def string
	if err := db.Pool.QueryRow(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'inventory_levels'::regclass AND pg_get_constraintdef(oid) LIKE '%strategy%'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	want := "CHECK ((strategy = ANY (ARRAY["
	for i, s := range holdfast.Strategies() {
		if i > 0 {
			want += ", "
		}
		want += fmt.Sprintf("'%s'::text", s)
	}
	want += "])))"
	if def != want {
		t.Errorf("the schema's strategy CHECK is\n\t%s\nholdfast.Strategies gives\n\t%s", def, want)
	}
	if err := insert(99, "bogus"); err == nil {
		t.Error("the schema accepts strategy \"bogus\"")
	}
}
