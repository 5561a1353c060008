package migrations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestStrategiesMatchSchema: the schema's CHECK on inventory_levels.strategy
// accepts exactly the strategies mysql.Strategies offers (the list the
// engine's validation, the MySQL bench and the demo read) among
// holdfast.Strategies.
func TestStrategiesMatchSchema(t *testing.T) {
	t.Parallel()
	d := mysqltest.EmptyDB(t, 2)
	ctx := context.Background()
	if _, err := migrations.Up(ctx, d.DB); err != nil {
		t.Fatal(err)
	}
	offered := mysql.Strategies()
	for i, s := range append(holdfast.Strategies(), "bogus") {
		_, err := d.DB.ExecContext(ctx, `INSERT INTO inventory_levels (shop_id, inventory_item_id, location_id, available, strategy, updated_at) VALUES (1, ?, 1, 0, ?, NOW(6))`, i+1, string(s))
		switch want := slices.Contains(offered, s); {
		case want && err != nil:
			t.Errorf("mysql.Strategies offers %q; the schema refuses it: %v", s, err)
		case !want && err == nil:
			t.Errorf("the schema accepts %q; mysql.Strategies does not offer it", s)
		}
	}
}
