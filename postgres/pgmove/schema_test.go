package pgmove_test

import (
	"context"
	"testing"

	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestGuardOnEveryShopTable: every table holding shops' rows (a shop_id
// column; partitioned ones at their root) has the placement guard, so a
// migration that adds a shop table after 15 cannot forget it (a move
// would copy the table, but writes to it would not be fenced); and every
// one either has shop_id in its primary key (a move copies it) or is one
// a move refuses to carry when the shop has rows there.
func TestGuardOnEveryShopTable(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 2)
	rows, err := db.Pool.Query(context.Background(), `
SELECT c.relname,
       -- every row insert, update and delete (tgtype bits 4, 16, 8 of row
       -- triggers, bit 1) reaches holdfast_shop_guard(): one trigger, or
       -- since migration 25 a separate insert trigger on the hot tables;
       -- or, since migration 26 for holdfast_events' updates and deletes,
       -- every statement's rows reach holdfast_shop_guard_statement()
       coalesce((SELECT bit_or(g.tgtype::int) & 28 FROM pg_trigger g
                 WHERE g.tgrelid = c.oid AND g.tgenabled <> 'D'
                   AND ((g.tgfoid = 'holdfast_shop_guard'::regproc AND g.tgtype::int & 1 = 1)
                        OR (g.tgfoid = 'holdfast_shop_guard_statement'::regproc AND g.tgtype::int & 1 = 0))), 0) = 28,
       EXISTS (SELECT 1 FROM pg_index x JOIN pg_attribute k ON k.attrelid = x.indrelid AND k.attnum = ANY (x.indkey)
               WHERE x.indrelid = c.oid AND x.indisprimary AND k.attname = 'shop_id')
FROM pg_class c
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND c.relname NOT IN ('api_keys', 'holdfast_shop_fences', 'holdfast_move_marks')
  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'shop_id' AND NOT a.attisdropped)
ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	// Every shop table is keyed by shop (the webhook tables since migration
	// 21, the shadow history since 23): a move can carry each of them.
	n := 0
	for rows.Next() {
		var name string
		var guarded, keyed bool
		if err := rows.Scan(&name, &guarded, &keyed); err != nil {
			t.Fatal(err)
		}
		n++
		if !guarded {
			t.Errorf("table %s holds shops' rows and not every insert, update and delete of a row runs holdfast_shop_guard()", name)
		}
		if !keyed {
			t.Errorf("table %s: shop_id is not in its primary key (a move refuses a shop with rows there)", name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("only %d shop tables found", n)
	}
}
