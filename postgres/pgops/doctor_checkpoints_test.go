package pgops_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/postgres/pgops"
)

// TestDoctorCheckpointsRestarts: a fresh durable cluster started and
// stopped as each CLI command does (migrate, keys list ×3, doctor) has
// only shutdown checkpoints, counted as requested; setting.checkpoints must
// not call them WAL-forced.
func TestDoctorCheckpointsRestarts(t *testing.T) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "holdfast-checkpoints-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the server may run as postgres
		t.Fatal(err)
	}
	dir = filepath.Join(dir, "pg")
	start := func() *pgcluster.Cluster {
		c, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: dir, Durable: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var pool *pgxpool.Pool
	for i := 0; i < 5; i++ {
		c := start()
		if i == 0 {
			pool, err = pgxpool.New(ctx, c.URL("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := migrations.Up(ctx, pool); err != nil {
				t.Fatal(err)
			}
			pool.Close()
		}
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c := start()
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	pool, err = pgxpool.New(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	f := one(t, doctor(t, pool, pgops.DoctorConfig{}), "setting.checkpoints")
	if f.Severity != health.SeverityOK {
		t.Errorf("a cluster restarted 5 times with little WAL: %+v, want ok", f)
	}
	t.Log(f.Message)
}
