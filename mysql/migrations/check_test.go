package migrations_test

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestCheck: Check and Applied only read. On an empty database Check is
// ErrSchemaBehind and no table appears; after Up it is nil; with a
// migration this build does not know it is ErrSchemaAhead.
func TestCheck(t *testing.T) {
	t.Parallel()
	d := mysqltest.EmptyDB(t, 2)
	ctx := context.Background()
	tables := func() int {
		var n int
		if err := d.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := migrations.Check(ctx, d.DB); !errors.Is(err, migrations.ErrSchemaBehind) {
		t.Fatalf("Check on an empty database: %v", err)
	}
	if v, err := migrations.Applied(ctx, d.DB); err != nil || len(v) != 0 {
		t.Fatalf("Applied on an empty database: %v %v", v, err)
	}
	if n := tables(); n != 0 {
		t.Fatalf("Check and Applied created %d tables", n)
	}
	if _, err := migrations.Up(ctx, d.DB); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Check(ctx, d.DB); err != nil {
		t.Fatalf("Check after Up: %v", err)
	}
	all, _ := migrations.All()
	if v, err := migrations.Applied(ctx, d.DB); err != nil || len(v) != len(all) {
		t.Fatalf("Applied after Up: %v %v, want %d versions", v, err, len(all))
	}
	if _, err := d.DB.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', UTC_TIMESTAMP(6))"); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Check(ctx, d.DB); !errors.Is(err, migrations.ErrSchemaAhead) {
		t.Fatalf("Check with a newer migration: %v", err)
	}
}
