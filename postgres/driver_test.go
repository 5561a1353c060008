package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver/drivertest"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestDriver runs the driver-level suite (engine/driver/drivertest)
// against this package as the engine's driver, each subtest on a fresh
// migrated database of the private test server.
func TestDriver(t *testing.T) {
	drivertest.Run(t, drivertest.Harness[pgx.Tx]{New: func(t *testing.T) *drivertest.Instance[pgx.Tx] {
		db := pgtest.DB(t, 4)
		c, err := postgres.New(db.Pool, holdfast.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return &drivertest.Instance[pgx.Tx]{
			Driver: postgres.DriverOf(c),
			Engine: c,
			Begin:  func(ctx context.Context) (pgx.Tx, error) { return db.Pool.Begin(ctx) },
			End: func(ctx context.Context, tx pgx.Tx, commit bool) error {
				if commit {
					return tx.Commit(ctx)
				}
				return tx.Rollback(ctx)
			},
		}
	}})
}
