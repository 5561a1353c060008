package migrations_test

import (
	"context"
	"sync"
	"testing"

	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// TestUp: a fresh database gets every migration once; concurrent migrators
// apply each file exactly once between them; a second Up applies nothing.
func TestUp(t *testing.T) {
	t.Parallel()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	d := mysqltest.EmptyDB(t, 8)
	ctx := context.Background()
	var wg sync.WaitGroup
	applied := make(chan []int, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := migrations.Up(ctx, d.DB)
			if err != nil {
				t.Error(err)
			}
			applied <- v
		}()
	}
	wg.Wait()
	close(applied)
	total := 0
	for v := range applied {
		total += len(v)
	}
	if total != len(all) {
		t.Fatalf("concurrent migrators applied %d migrations, want %d", total, len(all))
	}
	if v, err := migrations.Up(ctx, d.DB); err != nil || len(v) != 0 {
		t.Fatalf("second Up: %v %v", v, err)
	}
	var n int
	if err := d.DB.QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil || n != len(all) {
		t.Fatalf("schema_migrations: %d %v", n, err)
	}
}

// TestStatements: every embedded file splits into statements, none empty.
func TestStatements(t *testing.T) {
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range all {
		stmts := m.Statements()
		if len(stmts) == 0 {
			t.Errorf("%03d_%s: no statements", m.Version, m.Name)
		}
		for i, s := range stmts {
			if s == "" {
				t.Errorf("%03d_%s: statement %d empty", m.Version, m.Name, i+1)
			}
		}
	}
}
