package migrations_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// shardExceptions are the shop-scoped keys allowed not to lead with
// shop_id, as "table.index" (PRIMARY for the primary key) with the reason;
// "table" alone excuses a shop-scoped table without a primary key. Every
// other table with a shop_id column keeps shop_id first in its primary key
// and in every unique key, so that a deployment distributing by shop (one
// database per group of shops, or a sharding proxy) can place each row,
// and enforce each uniqueness, on one shard. See docs/DESIGN.md, "Sharding
// by shop"; package postgres/migrations' TestShardByShop is the PostgreSQL twin.
var shardExceptions = map[string]string{
	// Global: the key's hash is how the service learns which shop a request
	// is for, so it is looked up before any shop is known, and admin keys
	// have no shop. A sharded deployment keeps it beside the router.
	"api_keys.PRIMARY":       "directory of keys, looked up by hash before the shop is known",
	"api_keys.api_keys_hash": "directory of keys (see api_keys.PRIMARY)",
	// (inventory_ledger, audit_log and holdfast_events are keyed (shop_id,
	// id) and waiters_seq is no longer unique since migration 15, shop
	// moves; webhook_endpoints and webhook_dead_letters since migration 20.)
}

// TestShardByShop reads information_schema after every migration: each
// table with a shop_id column has a primary key, and shop_id is the first
// column of it and of each unique index, except where shardExceptions says
// why not.
func TestShardByShop(t *testing.T) {
	t.Parallel()
	d := mysqltest.EmptyDB(t, 2)
	ctx := context.Background()
	if _, err := migrations.Up(ctx, d.DB); err != nil {
		t.Fatal(err)
	}
	rows, err := d.DB.QueryContext(ctx, `
SELECT s.TABLE_NAME, s.INDEX_NAME, GROUP_CONCAT(s.COLUMN_NAME ORDER BY s.SEQ_IN_INDEX SEPARATOR ',')
  FROM information_schema.STATISTICS s
 WHERE s.TABLE_SCHEMA = DATABASE() AND s.NON_UNIQUE = 0
   AND EXISTS (SELECT 1 FROM information_schema.COLUMNS c
                WHERE c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = 'shop_id')
 GROUP BY s.TABLE_NAME, s.INDEX_NAME`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	tables := map[string]map[string][]string{} // table -> unique index -> columns
	for rows.Next() {
		var table, index, cols string
		if err := rows.Scan(&table, &index, &cols); err != nil {
			t.Fatal(err)
		}
		if tables[table] == nil {
			tables[table] = map[string][]string{}
		}
		tables[table][index] = strings.Split(cols, ",")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Shop-scoped tables without any unique index.
	bare, err := d.DB.QueryContext(ctx, `
SELECT c.TABLE_NAME FROM information_schema.COLUMNS c
 WHERE c.TABLE_SCHEMA = DATABASE() AND c.COLUMN_NAME = 'shop_id'`)
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	for bare.Next() {
		var table string
		if err := bare.Scan(&table); err != nil {
			t.Fatal(err)
		}
		if tables[table] == nil {
			tables[table] = map[string][]string{}
		}
	}
	if err := bare.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tables) < 5 {
		t.Fatalf("only %d shop-scoped tables found: %v", len(tables), tables)
	}
	used := map[string]bool{}
	excused := func(name string) bool {
		_, ok := shardExceptions[name]
		used[name] = used[name] || ok
		return ok
	}
	for _, table := range slices.Sorted(maps.Keys(tables)) {
		idx := tables[table]
		if _, ok := idx["PRIMARY"]; !ok && !excused(table) {
			t.Errorf("%s: a shop-scoped table without a primary key", table)
		}
		for _, index := range slices.Sorted(maps.Keys(idx)) {
			cols := idx[index]
			if cols[0] == "shop_id" || excused(table+"."+index) {
				continue
			}
			t.Errorf("%s: unique key %s is (%s): shop_id is not first", table, index, strings.Join(cols, ", "))
		}
		t.Logf("%s: %v", table, idx)
	}
	for name := range shardExceptions {
		if !used[name] {
			t.Errorf("shardExceptions lists %s, which now keeps shop_id first: remove it", name)
		}
	}
}
