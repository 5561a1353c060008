// Package restart_test restarts the PostgreSQL server under load. pgtest's
// server is shared by the whole test binary, so these tests live in their
// own package (their own binary and server) and run one after another.
package restart_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/internal/heavy"
	"github.com/holdfast/holdfast/internal/history"
	"github.com/holdfast/holdfast/postgres/faulttest"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// server is a durable private cluster (pgtest's is not: with
// synchronous_commit off an immediate shutdown loses acknowledged commits,
// which is the configuration's doing, not the engine's), with one migrated
// database.
var (
	server *pgcluster.Cluster
	db     *pgtest.Database // for TestRestartUnderLoad
	db2    *pgtest.Database // for TestRestartThroughPgBouncer
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	defer heavy.Lock()()
	if os.Getenv("TEST_DATABASE_URL") != "" {
		// No private cluster to restart: the test skips.
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, pgcluster.Options{Durable: true, MaxConnections: 100})
	if err != nil {
		fmt.Fprintln(os.Stderr, "restart:", err)
		return 1
	}
	defer c.Stop(context.Background()) //nolint:errcheck
	server = c
	for _, d := range []struct {
		name string
		dst  **pgtest.Database
	}{{"holdfast_restart", &db}, {"holdfast_restart_bouncer", &db2}} {
		pool, err := createDB(ctx, c, d.name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "restart:", err)
			return 1
		}
		defer pool.Close()
		*d.dst = &pgtest.Database{Name: d.name, URL: c.URL(d.name), Pool: pool}
	}
	code := m.Run()
	table := faulttest.Total.String()
	fmt.Printf("fault tally (faulttest/restart):\n%s", table)
	if p := os.Getenv("HOLDFAST_FAULT_REPORT"); p != "" {
		if f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "faulttest/restart:\n%s", table)
			f.Close()
		}
	}
	return code
}

func createDB(ctx context.Context, c *pgcluster.Cluster, name string) (*pgxpool.Pool, error) {
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return nil, err
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	admin.Close(ctx)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, c.URL(name))
	if err != nil {
		return nil, err
	}
	if _, err := migrations.Up(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return pool, nil
}

// The server is restarted (fast, then immediate shutdown) while workers run
// a random schedule with a history: calls during the outage end in
// ErrUnavailable (unknown outcome) and never in an untyped error; after it
// the engine recovers on its own; the history is linearizable and nothing
// acknowledged is lost.
func TestRestartUnderLoad(t *testing.T) {
	if server == nil {
		t.Skip("TEST_DATABASE_URL is set: no private cluster to restart")
	}
	restartUnderLoad(t, faulttest.Options{History: true, Database: db})
}

// The same through PgBouncer (transaction pooling): PgBouncer loses its
// server connections and reconnects. Regression test for finding 3
// (docs/FAULTS.md): PgBouncer answers some clients with its own class-08
// errors, which reached them untyped until the engine mapped them.
func TestRestartThroughPgBouncer(t *testing.T) {
	if server == nil {
		t.Skip("TEST_DATABASE_URL is set: no private cluster to restart")
	}
	if !faulttest.PgBouncerInstalled() {
		t.Skip(faulttest.ErrNoPgBouncer)
	}
	b := faulttest.StartPgBouncer(t, server.URL("postgres"))
	restartUnderLoad(t, faulttest.Options{History: true, Database: db2, Bouncer: b})
}

func restartUnderLoad(t *testing.T, o faulttest.Options) {
	cl := server
	seed := faulttest.Seed(t)
	e := faulttest.New(t, o)
	modes := []string{"fast", "immediate", "fast", "immediate"}
	if faulttest.Long() {
		modes = []string{"fast", "immediate", "fast", "immediate", "immediate", "fast", "immediate", "fast", "immediate", "immediate"}
	}
	ctx := context.Background()
	st := faulttest.Schedule{
		Seed: seed, Epochs: 2*len(modes) + 1, OpsPerEpoch: 25, OpTimeout: 20 * time.Second,
		PauseRate: 0.2, PauseMax: 2 * time.Millisecond,
		During: func(ctx context.Context, epoch int) {
			if epoch%2 == 0 || epoch/2 >= len(modes) {
				return
			}
			mode := modes[epoch/2]
			// Restart once the workers are well under way: after 40 more
			// statements (or when the epoch is over).
			waitStatements(e, 40)
			rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if err := cl.Restart(rctx, mode); err != nil {
				t.Errorf("restart %s: %v", mode, err)
				return
			}
			e.Tally.Inject(fmt.Sprintf("server restarted (%s shutdown)", mode), 1)
		},
	}.Run(ctx, e)
	t.Logf("seed %d: %s", seed, st)
	if st.Count("reserve", history.ResUnknown)+st.Count("claim", history.ResUnknown)+
		st.Count("release", history.ResUnknown)+st.Count("level", history.ResUnknown)+
		st.Count("adjust", history.ResUnknown) == 0 {
		t.Log("no call overlapped a restart (all succeeded around it)")
	}
	e.Verify(ctx)
}

// waitStatements waits until the engine has sent n more statements, for at
// most ten seconds.
func waitStatements(e *faulttest.Env, n int64) {
	start := e.Hook.Statements.Load()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for e.Hook.Statements.Load() < start+n {
		select {
		case <-tick.C:
		case <-deadline:
			return
		}
	}
}
