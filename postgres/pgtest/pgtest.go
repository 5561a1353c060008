// Package pgtest gives tests real PostgreSQL: one server per test binary and
// one freshly migrated database per test, dropped when the test ends.
//
// The server is TEST_DATABASE_URL when set (its role needs CREATEDB);
// otherwise a private throwaway cluster started from the locally installed
// server binaries (see pgcluster), so tests pass on a machine where no
// PostgreSQL server is running.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/internal/heavy"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgcluster"
)

var (
	serverURL string // maintenance database URL of the server under test
	template  string // migrated template database
	cluster   *pgcluster.Cluster
	seq       atomic.Int64
)

// Main starts the server, migrates a template database, runs the tests and
// tears everything down. It calls os.Exit.
func Main(m *testing.M) {
	os.Exit(run(m))
}

// Runner is what Run runs: a *testing.M, or a wrapper of one that starts
// another server first (mysqltest.Runner).
type Runner interface{ Run() int }

// Run is Main without os.Exit: it starts the server, runs m and tears
// everything down, and returns m's exit code. A test binary that needs
// both PostgreSQL and MariaDB nests them:
//
//	os.Exit(pgtest.Run(mysqltest.Runner(m)))
func Run(m Runner) int { return run(m) }

func run(m Runner) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		serverURL = u
	} else {
		c, err := pgcluster.Start(ctx, pgcluster.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			return 1
		}
		cluster = c
		defer c.Stop(context.Background()) //nolint:errcheck
		serverURL = c.URL("postgres")
	}
	template = fmt.Sprintf("holdfast_tmpl_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if err := exec(ctx, serverURL, "CREATE DATABASE "+template); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: create template:", err)
		return 1
	}
	defer exec(context.Background(), serverURL, "DROP DATABASE IF EXISTS "+template+" WITH (FORCE)") //nolint:errcheck
	pool, err := pgxpool.New(ctx, withDatabase(serverURL, template))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	if _, err := migrations.Up(ctx, pool); err != nil {
		pool.Close()
		fmt.Fprintln(os.Stderr, "pgtest: migrate:", err)
		return 1
	}
	pool.Close()
	return m.Run()
}

// Database is one isolated, migrated database.
type Database struct {
	Name string
	URL  string
	Pool *pgxpool.Pool
}

// DB creates a fresh migrated database for t and drops it when t ends. The
// pool allows maxConns connections (0 means 20).
func DB(t testing.TB, maxConns int) *Database {
	t.Helper()
	return create(t, maxConns, "TEMPLATE "+template)
}

// EmptyDB is DB without the schema, for tests of migrations themselves.
func EmptyDB(t testing.TB, maxConns int) *Database {
	t.Helper()
	return create(t, maxConns, "")
}

func create(t testing.TB, maxConns int, clause string) *Database {
	t.Helper()
	if template == "" {
		t.Fatal("pgtest: call pgtest.Main from TestMain")
	}
	ctx := context.Background()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), seq.Add(1))
	if err := exec(ctx, serverURL, fmt.Sprintf("CREATE DATABASE %s %s", name, clause)); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	u := withDatabase(serverURL, name)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	if maxConns == 0 {
		maxConns = 20
	}
	cfg.MaxConns = int32(maxConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		_ = exec(context.Background(), serverURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return &Database{Name: name, URL: u, Pool: pool}
}

// Cluster is the private cluster the tests run on, or nil when they run on
// TEST_DATABASE_URL. Fault tests use it to restart the server.
func Cluster() *pgcluster.Cluster { return cluster }

// ServerURL is the maintenance-database URL of the server under test.
func ServerURL() string { return serverURL }

func exec(ctx context.Context, u, sql string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func withDatabase(u, db string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		// keyword/value form
		return u + " dbname=" + db
	}
	p.Path = "/" + db
	return p.String()
}

// MainHeavy is Main for a heavy test binary: it holds the machine-wide
// heavy lock (heavy.Lock) from before its server starts until it stops.
func MainHeavy(m *testing.M) {
	release := heavy.Lock()
	code := run(m)
	release()
	os.Exit(code)
}
