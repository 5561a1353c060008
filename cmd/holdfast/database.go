package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/pgcluster"
)

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
	// persistent: a cluster in dataDir that survives restarts (serve).
	persistent
)

// openDatabase resolves the command's database. logf reports progress (the
// embedded cluster takes a few seconds to initialise).
func openDatabase(ctx context.Context, mode dbMode, dataDir string, logf func(string, ...any)) (*database, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return &database{URL: u}, nil
	}
	opts := pgcluster.Options{Log: logf, Durable: true}
	if mode == persistent {
		opts.DataDir = dataDir
	}
	c, err := pgcluster.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: %w", err)
	}
	return &database{URL: c.URL("postgres"), Cluster: c}, nil
}

// Close stops the embedded cluster, if any.
func (d *database) Close() {
	if d.Cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = d.Cluster.Stop(ctx)
	}
}

// pool opens a connection pool with holdfast's application_name.
func (d *database) pool(ctx context.Context, maxConns int32, appName string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = appName
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

func stderrf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
