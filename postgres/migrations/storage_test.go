package migrations_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestStorageOptions migrates an empty database and reads the storage
// options (pg_class.reloptions) of every reservation_units partition and of
// inventory_counters: each must be exactly PartitionStorage or
// CounterStorage, what the doctor checks databases against. A migration
// that changes one without the other fails here.
func TestStorageOptions(t *testing.T) {
	t.Parallel()
	db := pgtest.EmptyDB(t, 2)
	ctx := context.Background()
	if _, err := migrations.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Pool.Query(ctx, `
SELECT c.relname::text, coalesce(c.reloptions, '{}'::text[])
  FROM pg_class c
 WHERE c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'reservation_units'::regclass)
    OR c.oid = 'inventory_counters'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	partitions := 0
	for rows.Next() {
		var name string
		var opts []string
		if err := rows.Scan(&name, &opts); err != nil {
			t.Fatal(err)
		}
		have := map[string]string{}
		for _, o := range opts {
			k, v, _ := strings.Cut(o, "=")
			have[k] = v
		}
		want := migrations.PartitionStorage()
		if name == "inventory_counters" {
			want = migrations.CounterStorage()
		} else {
			partitions++
		}
		if !maps.Equal(have, want) {
			var diff []string
			for k := range have {
				if have[k] != want[k] {
					diff = append(diff, fmt.Sprintf("%s: migrations %q, table %q", k, have[k], want[k]))
				}
			}
			for k := range want {
				if _, ok := have[k]; !ok {
					diff = append(diff, fmt.Sprintf("%s: migrations unset, table %q", k, want[k]))
				}
			}
			slices.Sort(diff)
			t.Errorf("%s: the migrations and migrate's storage table differ: %s", name, strings.Join(diff, "; "))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if partitions != 16 {
		t.Fatalf("%d reservation_units partitions, want 16", partitions)
	}
}
