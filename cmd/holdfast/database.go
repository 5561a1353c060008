package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/holdfast/holdfast/pgcluster"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrate"
)

// defaultDataDir is where the embedded cluster lives unless --data-dir says.
const defaultDataDir = ".holdfast"

// dataDirFlag adds --data-dir to a command's flags.
func dataDirFlag(fs *pflag.FlagSet) *string {
	var s string
	dataDirVar(fs, &s)
	return &s
}

func dataDirVar(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "data-dir", defaultDataDir, "embedded cluster directory, when DATABASE_URL is unset, relative to the working directory; shared by every command and kept across restarts; only serve and migrate create it")
}

// database is the database a command runs on: DATABASE_URL when set, else
// the embedded default, a private cluster from the local server binaries.
type database struct {
	URL     string
	Cluster *pgcluster.Cluster // nil when DATABASE_URL is set
}

// dbMode selects what the embedded default keeps.
type dbMode int

const (
	// throwaway: a temporary cluster, removed when the command ends (demo,
	// bench).
	throwaway dbMode = iota
	// persistent: the cluster in dataDir, created when missing (serve and
	// migrate only: the commands that set a database up). The server
	// already running on it is used.
	persistent
	// existing: the cluster in dataDir, which must exist (every other
	// command, keys create and webhooks add included): run from another
	// directory with the default --data-dir they refuse, naming the
	// directory, rather than make a second, empty database there.
	existing
)

// openDatabase resolves the command's database. logf reports progress (the
// embedded cluster takes a few seconds to initialise). Errors are one line.
func openDatabase(ctx context.Context, mode dbMode, dataDir string, logf func(string, ...any)) (*database, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return &database{URL: u}, nil
	}
	opts := pgcluster.Options{Log: logf, Durable: true}
	if mode != throwaway {
		opts.DataDir, opts.Shared, opts.NoInit = dataDir, true, mode == existing
	}
	c, err := pgcluster.Start(ctx, opts)
	if errors.Is(err, pgcluster.ErrNoCluster) {
		where := dataDir
		if abs, aerr := filepath.Abs(dataDir); aerr == nil && abs != dataDir {
			where = dataDir + " (" + abs + ")"
		}
		return nil, fmt.Errorf("no embedded database in %s: run where `holdfast serve` runs or pass the --data-dir it uses (the default %s is relative to the working directory), set DATABASE_URL, or create one here with `holdfast migrate`", where, defaultDataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
	}
	return &database{URL: c.URL("postgres"), Cluster: c}, nil
}

// Close stops the embedded cluster, if any (a shared one only when no other
// command uses it).
func (d *database) Close() {
	if d.Cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), pgcluster.StartTimeoutMax)
		defer cancel()
		_ = d.Cluster.Stop(ctx)
	}
}

// pool opens a connection pool with holdfast's application_name.
func (d *database) pool(ctx context.Context, maxConns int32, appName string) (*pgxpool.Pool, error) {
	return d.tracedPool(ctx, maxConns, appName, nil)
}

// tracedPool is pool with tracer, when not nil, on every connection.
func (d *database) tracedPool(ctx context.Context, maxConns int32, appName string, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		// pgx's parse errors quote the URL, which may carry a password.
		return nil, errors.New("DATABASE_URL is not a valid PostgreSQL connection string")
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = appName
	}
	follow := postgres.Follow(cfg) // follow the primary of an HA cluster (#27)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		follow.Attach(pool)
	}
	return pool, err
}

// errNoSchema is what a read-only command answers on a database without
// holdfast's schema: it never creates one (a mistyped DATABASE_URL must not
// grow a schema in the wrong database).
var errNoSchema = errors.New("the database has no holdfast schema: run `holdfast migrate` first, with the same DATABASE_URL or --data-dir (this command never creates or changes the schema)")

// requireSchema refuses, in one line, a database whose schema is not this
// binary's. Read-only commands call it instead of migrating.
func requireSchema(ctx context.Context, pool *pgxpool.Pool) error {
	v, err := migrate.Version(ctx, pool)
	if err != nil {
		return err
	}
	switch latest := migrate.Latest(); {
	case v == 0:
		return errNoSchema
	case v < latest:
		return fmt.Errorf("the database's holdfast schema is at version %d, this binary needs %d: run `holdfast migrate` first (this command never creates or changes the schema)", v, latest)
	case v > latest:
		return fmt.Errorf("the database's holdfast schema is at version %d, newer than this binary's %d: run a newer holdfast", v, latest)
	}
	return nil
}

// stderrf writes a progress line to stderr.
func stderrf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
