package mysql_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver/drivertest"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestDriver runs the driver-level suite (engine/driver/drivertest)
// against this package as the engine's driver, each subtest on a fresh
// migrated database of the private MariaDB server.
func TestDriver(t *testing.T) {
	drivertest.Run(t, drivertest.Harness[*sql.Tx]{New: func(t *testing.T) *drivertest.Instance[*sql.Tx] {
		db := mysqltest.DB(t, 4)
		c, err := mysql.New(db.DB, holdfast.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return &drivertest.Instance[*sql.Tx]{
			Driver: mysql.DriverOf(c),
			Engine: c,
			Begin:  func(ctx context.Context) (*sql.Tx, error) { return db.DB.BeginTx(ctx, mysql.TxOptions()) },
			End: func(ctx context.Context, tx *sql.Tx, commit bool) error {
				if commit {
					return tx.Commit()
				}
				return tx.Rollback()
			},
		}
	}})
}
