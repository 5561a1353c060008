package bench

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/postgres"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// query returns the embedded statement sql/name.sql.
func query(name string) string { return statements.Get(name) }

var statements = sqltext.Load("bench", sqlFiles, "sql")

// EngineStrategies are the engine's allocation strategies the bench
// measures, each as postgres.Client with Config{Strategy: s}: every strategy
// of the engine's table (postgres.Strategies).
var EngineStrategies = postgres.Strategies()

// Baselines are the comparison patterns implemented in this package on
// their own tables: single-row pessimistic (SELECT … FOR UPDATE + ledger entry), and an
// optimistic version column with bounded retries.
var Baselines = []string{"pessimistic", "optimistic"}

// Strategies returns every strategy name the bench knows, engine strategies
// first.
func Strategies() []string {
	var out []string
	for _, s := range EngineStrategies {
		out = append(out, string(s))
	}
	return append(out, Baselines...)
}

// IsEngine reports whether name is an engine strategy (not a baseline).
func IsEngine(name string) bool {
	for _, s := range EngineStrategies {
		if string(s) == name {
			return true
		}
	}
	return false
}

// reserver is one way of making reservations, bound to one database.
type reserver interface {
	// setup creates what the reserver needs (baselines: their tables) and
	// stocks every key with units.
	setup(ctx context.Context, keys []holdfast.Key, units int) error
	// reserve holds every line for checkout, or nothing, in its own
	// transaction.
	reserve(ctx context.Context, shop int64, checkout uuid.UUID, lines []holdfast.Line) error
	// reserveTx does the same inside the caller's transaction.
	reserveTx(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, lines []holdfast.Line) error
	// audit checks the reserver's invariant over the whole database.
	audit(ctx context.Context) (audit, error)
	// tables are LIKE patterns of the tables a reservation writes, for the
	// dead-tuple count.
	tables() []string
	// start and stop run background maintenance (the engine's replenisher).
	start(ctx context.Context)
	stop(ctx context.Context) error
}

// audit is a reserver's account of its database after a run.
type audit struct {
	held     int64  // units in holds
	oversold int64  // units held beyond stock
	problem  string // any other violation of the invariant; empty when none
}

// errSoldOut is a baseline's answer when a line cannot be served.
var errSoldOut = fmt.Errorf("bench: %w", holdfast.ErrInsufficientStock)

// openReserver returns the named strategy on pool; counters receives its
// retries.
func openReserver(name string, pool *pgxpool.Pool, c *counters, logger *slog.Logger) (reserver, error) {
	switch {
	case IsEngine(name):
		return openEngine(holdfast.Strategy(name), pool, c, logger)
	case name == "pessimistic":
		return &pessimistic{pool: pool, counters: c}, nil
	case name == "optimistic":
		return &optimistic{pool: pool, counters: c}, nil
	}
	return nil, fmt.Errorf("bench: unknown strategy %q (known: %s)", name, strings.Join(Strategies(), ", "))
}
