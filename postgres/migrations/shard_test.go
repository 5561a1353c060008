package migrations_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// shardExceptions are the shop-scoped keys allowed not to lead with
// shop_id, each with the reason: "table" for a table without a primary key
// led by shop_id, "table.index" for one unique index. Every other table with
// a shop_id column keeps shop_id first in its primary key and in every
// unique key, so that a deployment distributing by shop (Citus-style, or
// one database per group of shops) can place each row, and enforce each
// uniqueness, on one shard. See docs/DESIGN.md, "Sharding by shop".
var shardExceptions = map[string]string{
	// Global: the key's hash is how the service learns which shop a request
	// is for, so it is looked up before any shop is known, and admin keys
	// have no shop. A sharded deployment keeps it as a reference table.
	"api_keys.api_keys_pkey":         "directory of keys, looked up by hash before the shop is known",
	"api_keys.api_keys_key_hash_key": "directory of keys (see api_keys_pkey)",
	// Append-only logs with a bigserial id as their order; every read
	// (listing, sampling) goes through an index led by shop_id. (Migration
	// 15 re-keyed the ledger, the events and the hold lines by (shop_id,
	// id) for shop moves; a move refuses a shop with rows in these.)
}

// TestShardByShop reads the catalog after every migration: each table with
// a shop_id column has a primary key, shop_id is the first column of it and
// of each of its unique indexes, except where shardExceptions says why not.
// Partitions are judged through their parent (their keys are the parent's).
func TestShardByShop(t *testing.T) {
	t.Parallel()
	db := pgtest.EmptyDB(t, 2)
	ctx := context.Background()
	if _, err := migrations.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	// One row per shop-scoped table and unique index (or none: a NULL index
	// row for a table without any).
	rows, err := db.Pool.Query(ctx, `
SELECT c.relname, coalesce(i.relname, ''), coalesce(x.indisprimary, false),
       coalesce((SELECT array_agg(a.attname ORDER BY k.ord)
                   FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord)
                   JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum), '{}')
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
  LEFT JOIN pg_index x ON x.indrelid = c.oid AND x.indisunique
  LEFT JOIN pg_class i ON i.oid = x.indexrelid
 WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
   AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'shop_id' AND NOT a.attisdropped)
 ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		index   string
		primary bool
		cols    []string
	}
	tables := map[string][]key{}
	for rows.Next() {
		var table string
		var k key
		if err := rows.Scan(&table, &k.index, &k.primary, &k.cols); err != nil {
			t.Fatal(err)
		}
		tables[table] = append(tables[table], k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tables) < 5 {
		t.Fatalf("only %d shop-scoped tables found: %v", len(tables), tables)
	}
	used := map[string]bool{}
	for _, table := range slices.Sorted(maps.Keys(tables)) {
		hasPrimary := false
		for _, k := range tables[table] {
			if k.index == "" {
				continue
			}
			hasPrimary = hasPrimary || k.primary
			if len(k.cols) > 0 && k.cols[0] == "shop_id" {
				continue
			}
			if _, ok := shardExceptions[table+"."+k.index]; ok {
				used[table+"."+k.index] = true
				continue
			}
			kind := "unique index"
			if k.primary {
				kind = "primary key"
			}
			t.Errorf("%s: %s %s is (%s): shop_id is not first", table, kind, k.index, strings.Join(k.cols, ", "))
		}
		if !hasPrimary {
			if _, ok := shardExceptions[table]; ok {
				used[table] = true
			} else {
				t.Errorf("%s: a shop-scoped table without a primary key", table)
			}
		}
		t.Logf("%s: %v", table, tables[table])
	}
	for name := range shardExceptions {
		if !used[name] {
			t.Errorf("shardExceptions lists %s, which now keeps shop_id first: remove it", name)
		}
	}
}
