package pgops

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres/migrations"
)

// The doctor's check of the churning tables' storage options (storage.*),
// against the table package migrations keeps.

func sameOption(have, want string) bool {
	if have == want {
		return true
	}
	h, err1 := strconv.ParseFloat(have, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && h == w
}

func (d *doctor) storage(ctx context.Context) error {
	rows, err := d.pool.Query(ctx, statement("storage_options"))
	if err != nil {
		return err
	}
	type rel struct {
		name string
		opts []string
	}
	rels, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (rel, error) {
		var r rel
		err := row.Scan(&r.name, &r.opts)
		return r, err
	})
	if err != nil {
		return err
	}
	good, partitions := 0, 0
	for _, r := range rels {
		// What the migrations set: one table, in package migrations, that its
		// TestStorageOptions holds to the migrations.
		want := migrations.PartitionStorage()
		if r.name == "inventory_counters" {
			want = migrations.CounterStorage()
		} else {
			partitions++
		}
		have := map[string]string{}
		for _, o := range r.opts {
			k, v, _ := strings.Cut(o, "=")
			have[k] = v
		}
		var problems []string
		sev := health.SeverityOK
		if v, ok := have["autovacuum_enabled"]; ok && (v == "false" || v == "off" || v == "0") {
			problems = append(problems, "autovacuum_enabled = "+v)
			sev = health.SeverityCritical
		}
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v, ok := have[k]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s not set (want %s)", k, want[k]))
			case !sameOption(v, want[k]):
				problems = append(problems, fmt.Sprintf("%s = %s (want %s)", k, v, want[k]))
			default:
				continue
			}
			if sev == health.SeverityOK {
				sev = health.SeverityWarn
			}
		}
		if len(problems) == 0 {
			good++
			continue
		}
		d.add("storage."+r.name, sev, strings.Join(problems, "; "),
			"this table churns on every reservation; without its own storage options autovacuum waits for a share of the table (20% by default) to be dead and throttles itself, and the SKIP LOCKED scans walk the dead tuples meanwhile",
			fmt.Sprintf("ALTER TABLE %s SET (%s); (migration 001 sets these on every partition: set them again on a partition that was recreated or altered)", r.name, optionList(want)))
	}
	if partitions == 0 {
		d.add("storage.reservation_units", health.SeverityCritical, "reservation_units has no partitions",
			"the pool strategy cannot store a unit", "run `holdfast migrate`; if it reports the schema current, the partitions were dropped by hand and must be recreated as in postgres/migrate/sql/001_init.sql")
	}
	if good > 0 {
		d.add("storage", health.SeverityOK, fmt.Sprintf("%d of %d tables (%d reservation_units partitions and inventory_counters) carry their storage options", good, len(rels), partitions), "", "")
	}
	return nil
}

func optionList(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " = " + m[k]
	}
	return strings.Join(parts, ", ")
}
