package migrations_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestConcurrentUp runs several migrators at once on an empty database:
// every migration is applied exactly once, and running again is a no-op.
func TestConcurrentUp(t *testing.T) {
	t.Parallel()
	db := pgtest.EmptyDB(t, 10)
	ctx := context.Background()
	if err := migrations.Check(ctx, db.Pool); !errors.Is(err, migrations.ErrSchemaBehind) {
		t.Fatalf("empty database: %v", err)
	}
	var wg sync.WaitGroup
	applied := make([][]int, 5)
	errs := make([]error, 5)
	for i := range applied {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = migrations.Up(ctx, db.Pool)
		}()
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("runner %d: %v", i, err)
		}
		total += len(applied[i])
	}
	if total != len(migrations.All()) {
		t.Fatalf("%d migrations applied in all, want %d", total, len(migrations.All()))
	}
	again, err := migrations.Up(ctx, db.Pool)
	if err != nil || len(again) != 0 {
		t.Fatalf("re-run: %v %v", again, err)
	}
	if err := migrations.Check(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM holdfast_migrations").Scan(&n); err != nil || n != len(migrations.All()) {
		t.Fatalf("holdfast_migrations has %d rows (%v)", n, err)
	}
	// The partitions carry the pool's storage options; the parent cannot.
	var opts []string
	if err := db.Pool.QueryRow(ctx, "SELECT reloptions FROM pg_class WHERE relname = 'reservation_units_p7'").Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if len(opts) == 0 || opts[0] != "fillfactor=70" {
		t.Fatalf("partition options: %v", opts)
	}
}
