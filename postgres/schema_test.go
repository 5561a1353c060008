package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestNewChecksSchemaVersion (#12 item 5): New on a database without the
// schema, or with an older one, says to run `holdfast migrate` with a
// typed error.
func TestNewChecksSchemaVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty := pgtest.EmptyDB(t, 2)
	if _, err := postgres.New(empty.Pool, holdfast.Config{}); !errors.Is(err, holdfast.ErrSchemaMissing) || !strings.Contains(err.Error(), "holdfast migrate") {
		t.Fatalf("empty database: %v", err)
	}
	old := pgtest.EmptyDB(t, 2)
	first := migrations.All()[0]
	for _, stmt := range []string{
		first.SQL,
		"CREATE TABLE holdfast_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT clock_timestamp())",
		"INSERT INTO holdfast_migrations (version, name) VALUES (1, 'init')",
	} {
		if _, err := old.Pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgres.New(old.Pool, holdfast.Config{}); !errors.Is(err, holdfast.ErrSchemaOutdated) || !strings.Contains(err.Error(), "holdfast migrate") {
		t.Fatalf("version 1 database: %v", err)
	}
	if _, err := migrations.Up(ctx, old.Pool); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.New(old.Pool, holdfast.Config{}); err != nil {
		t.Fatalf("after migrate: %v", err)
	}
}
