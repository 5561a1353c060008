// Package migrate applies holdfast's schema: embedded, numbered, forward-only
// SQL files. Applying is idempotent and safe to run from several processes at
// once: each migration runs in its own transaction, which first takes a
// transaction-scoped advisory lock that serialises the runners (so it works
// through PgBouncer in transaction pooling mode too), and commits together
// with its row in holdfast_migrations.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed sql/*.sql
var files embed.FS

// lockID is the transaction advisory lock that serialises migration runners.
const lockID = 0x686f6c6466617374 // "holdfast"

// Migration is one numbered schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// ErrSchemaBehind is returned by Check when migrations are pending.
var ErrSchemaBehind = errors.New("migrate: database schema is behind; run `holdfast migrate`")

// ErrSchemaAhead is returned by Check when the database has migrations this
// binary does not know: it is older than the schema.
var ErrSchemaAhead = errors.New("migrate: database schema is newer than this binary")

// All returns the embedded migrations in order.
func All() []Migration {
	entries, err := fs.ReadDir(files, "sql")
	if err != nil {
		panic(err)
	}
	var ms []Migration
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("migrate: bad migration file name " + name)
		}
		b, err := files.ReadFile("sql/" + name)
		if err != nil {
			panic(err)
		}
		ms = append(ms, Migration{Version: v, Name: strings.TrimSuffix(rest, ".sql"), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms
}

// Latest is the newest embedded migration version.
func Latest() int {
	ms := All()
	return ms[len(ms)-1].Version
}

// Up applies every pending migration and returns the versions it applied.
// Re-running is a no-op. Each migration runs in its own transaction under a
// transaction-scoped advisory lock, so concurrent runners (and runs through
// PgBouncer in transaction pooling mode) are safe.
func Up(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	return upTo(ctx, pool, Latest())
}

// upTo is Up that stops after migration limit.
func upTo(ctx context.Context, pool *pgxpool.Pool, limit int) ([]int, error) {
	var applied []int
	start := -1 // the version before this call's first migration
	for {
		var did int
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockID)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS holdfast_migrations (
				version    integer PRIMARY KEY,
				name       text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
				return err
			}
			current, err := version(ctx, tx)
			if err != nil {
				return err
			}
			if start < 0 {
				start = current
			}
			for _, m := range All() {
				if m.Version <= current || m.Version > limit {
					continue
				}
				if _, err := tx.Exec(ctx, m.SQL); err != nil {
					return fmt.Errorf("%03d_%s: %w", m.Version, m.Name, err)
				}
				if m.Version == groupedEventsVersion && start == 0 {
					// A database this call created: no process of an
					// older release serves it (they refuse a schema
					// they do not find; only one started in the moment
					// between this call's 027 and 028 could), so its
					// holds' events are grouped from the start.
					if err := enableGroupedEvents(ctx, tx); err != nil {
						return err
					}
				}
				if _, err := tx.Exec(ctx, "INSERT INTO holdfast_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
					return err
				}
				did = m.Version
				return nil
			}
			return nil
		})
		if err != nil {
			return applied, fmt.Errorf("migrate: %w", err)
		}
		if did == 0 {
			return applied, nil
		}
		applied = append(applied, did)
	}
}

// Version reports the newest applied migration (0 for an empty database).
func Version(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	return version(ctx, pool)
}

// Check returns nil when the schema is exactly current, ErrSchemaBehind or
// ErrSchemaAhead otherwise.
func Check(ctx context.Context, pool *pgxpool.Pool) error {
	v, err := Version(ctx, pool)
	if err != nil {
		return err
	}
	switch latest := Latest(); {
	case v < latest:
		return fmt.Errorf("%w (at version %d, this binary needs %d)", ErrSchemaBehind, v, latest)
	case v > latest:
		return fmt.Errorf("%w (at version %d, this binary knows %d)", ErrSchemaAhead, v, latest)
	}
	return nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func version(ctx context.Context, conn querier) (int, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('holdfast_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM holdfast_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	return v, nil
}

// groupedEventsVersion is the migration that taught holdfast grouped hold
// events (028_grouped_events.sql).
const groupedEventsVersion = 28

// EnableGroupedEvents switches on grouped hold events (migration 28): the
// holds one statement creates in a shop become one event row. Run it once
// every process that serves the database runs a release that reads them
// (this one or later): an older process would give a grouped row one
// cursor. It cannot be switched off. A database created by this release's
// Up has it on already. Idempotent.
func EnableGroupedEvents(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		v, err := version(ctx, tx)
		if err != nil {
			return err
		}
		if v < groupedEventsVersion {
			return fmt.Errorf("migrate: grouped events need schema version %d (the database is at %d): run holdfast migrate first", groupedEventsVersion, v)
		}
		return enableGroupedEvents(ctx, tx)
	})
}

// GroupedEvents reports whether grouped hold events are on.
func GroupedEvents(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var on bool
	err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM holdfast_features WHERE name = 'grouped_events')`).Scan(&on)
	return on, err
}

func enableGroupedEvents(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `INSERT INTO holdfast_features (name) VALUES ('grouped_events') ON CONFLICT (name) DO NOTHING`)
	return err
}
