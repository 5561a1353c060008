// Package migrations holds the MySQL/MariaDB schema of holdfast's MySQL
// engine as embedded, numbered, forward-only .sql files, and applies them.
//
// MySQL commits DDL implicitly, so a migration is not transactional: each
// file is applied statement by statement and recorded once all of it ran.
// Files are written so that a half-applied file is visible and fixed by
// hand, never silently skipped.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

//go:embed sql/*.sql
var files embed.FS

// LockTimeout bounds how long Up waits for another process migrating the
// same database, in seconds.
const LockTimeout = 60

// Migration is one numbered schema file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

var fileName = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.sql$`)

// All returns the embedded migrations in version order.
func All() ([]Migration, error) {
	entries, err := files.ReadDir("sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migrations: bad file name %q", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := files.ReadFile("sql/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: m[2], SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	// Gaps are allowed (features take their numbers in parallel); each
	// version appears once.
	for i, m := range out {
		if i > 0 && m.Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations: version %d appears twice", m.Version)
		}
	}
	return out, nil
}

// Statements splits a migration into statements: a statement ends with a
// semicolon at the end of a line. Comment lines are dropped.
func (m Migration) Statements() []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(m.SQL, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// ErrNoDatabase: the connection selects no database (a DSN or URL
// without /dbname), so there is nowhere to put the schema.
var ErrNoDatabase = errors.New("migrations: the connection selects no database (name one: …/dbname)")

// Up applies every migration newer than the database's version and returns
// the versions it applied. Concurrent callers on one database are
// serialised by a named lock on one pinned connection (GET_LOCK is scoped
// to the session, which is right here and only here).
func Up(ctx context.Context, db *sql.DB) ([]int, error) {
	return upTo(ctx, db, math.MaxInt)
}

// upTo is Up that stops after migration limit.
func upTo(ctx context.Context, db *sql.DB, limit int) ([]int, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Without a database selected the lock's name is NULL, and so is
	// GET_LOCK's answer: say what is missing, not that the lock is held.
	var dbName sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbName); err != nil {
		return nil, err
	}
	if !dbName.Valid || dbName.String == "" {
		return nil, ErrNoDatabase
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(CONCAT('holdfast_migrate_', DATABASE()), ?)", LockTimeout).Scan(&got); err != nil {
		return nil, err
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, fmt.Errorf("migrations: another process holds the migration lock for over %ds", LockTimeout)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(CONCAT('holdfast_migrate_', DATABASE()))") //nolint:errcheck
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INT         NOT NULL PRIMARY KEY,
    name       VARCHAR(100) NOT NULL,
    applied_at DATETIME(6) NOT NULL
) ENGINE = InnoDB`); err != nil {
		return nil, err
	}
	// Versions may have gaps (features take numbers in parallel), so what
	// runs is every migration the database has not recorded, in order.
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, err
	}
	done := map[int]bool{}
	current := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, err
		}
		done[v], current = true, max(current, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if latest := all[len(all)-1].Version; current > latest {
		return nil, fmt.Errorf("migrations: database is at version %d, newer than this build's %d", current, latest)
	}
	var applied []int
	for _, m := range all {
		if done[m.Version] || m.Version > limit {
			continue
		}
		for i, stmt := range m.Statements() {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				// A migration that locks tables (024) must not hand its
				// connection back to the pool still holding them.
				_, _ = conn.ExecContext(context.WithoutCancel(ctx), "UNLOCK TABLES")
				return applied, fmt.Errorf("migrations: %03d_%s statement %d: %w", m.Version, m.Name, i+1, err)
			}
		}
		if m.Version == groupedEventsVersion && current == 0 {
			// A database this call created: no process of an older
			// release serves it (they refuse a schema they do not
			// find), so its holds' events are grouped from the start.
			if _, err := conn.ExecContext(ctx, enableGroupedEventsSQL); err != nil {
				return applied, err
			}
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, UTC_TIMESTAMP(6))", m.Version, m.Name); err != nil {
			return applied, err
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}

// ErrSchemaBehind is returned by Check when migrations are pending (an
// empty database included): run `holdfast migrate` or Up.
var ErrSchemaBehind = errors.New("migrations: database schema is behind; run `holdfast migrate`")

// ErrSchemaAhead is returned by Check when the database has migrations this
// build does not know.
var ErrSchemaAhead = errors.New("migrations: database schema is newer than this binary")

// Applied returns the versions the database has recorded, in order; none
// for a database without holdfast's schema. It reads only, and creates
// nothing.
func Applied(ctx context.Context, db *sql.DB) ([]int, error) {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'schema_migrations'").Scan(&n); err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, "SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Check returns nil when every embedded migration is applied and none
// unknown to this build is, ErrSchemaBehind or ErrSchemaAhead otherwise.
// Unlike Up it only reads: read-only commands call it instead of migrating.
func Check(ctx context.Context, db *sql.DB) error {
	all, err := All()
	if err != nil {
		return err
	}
	applied, err := Applied(ctx, db)
	if err != nil {
		return err
	}
	done := map[int]bool{}
	for _, v := range applied {
		done[v] = true
	}
	latest := all[len(all)-1].Version
	if len(applied) > 0 && applied[len(applied)-1] > latest {
		return fmt.Errorf("%w (at version %d, this binary knows %d)", ErrSchemaAhead, applied[len(applied)-1], latest)
	}
	pending := 0
	for _, m := range all {
		if !done[m.Version] {
			pending++
		}
	}
	if pending > 0 {
		return fmt.Errorf("%w (%d of %d migrations pending)", ErrSchemaBehind, pending, len(all))
	}
	return nil
}

// groupedEventsVersion is the migration that taught holdfast grouped hold
// events (023_grouped_events.sql).
const groupedEventsVersion = 23

const enableGroupedEventsSQL = "INSERT IGNORE INTO holdfast_features (name, enabled_at) VALUES ('grouped_events', UTC_TIMESTAMP(6))"

// EnableGroupedEvents switches on grouped hold events (migration 23): a
// combined batch writes one event row per shop, not one per hold. Run it
// once every process that serves the database runs a release that reads
// them (this one or later): an older process would give a grouped row one
// cursor. It cannot be switched off. A database created by this release's
// Up has it on already. Idempotent.
func EnableGroupedEvents(ctx context.Context, db *sql.DB) error {
	applied, err := Applied(ctx, db)
	if err != nil {
		return err
	}
	if !slices.Contains(applied, groupedEventsVersion) {
		return fmt.Errorf("migrations: grouped events need migration %d: run holdfast migrate first", groupedEventsVersion)
	}
	_, err = db.ExecContext(ctx, enableGroupedEventsSQL)
	return err
}

// GroupedEvents reports whether grouped hold events are on.
func GroupedEvents(ctx context.Context, db *sql.DB) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM holdfast_features WHERE name = 'grouped_events'").Scan(&n)
	return n > 0, err
}
