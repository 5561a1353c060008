package mysqlstore

import (
	"context"
	"database/sql"
	"testing"

	"github.com/holdfast/holdfast/mysql/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// mySQLTxIsolation is the isolation level InnoDB reports for a
// transaction of the webhook store (inTx), for the tests.
func mySQLTxIsolation(ctx context.Context, db *sql.DB) (string, error) {
	var level string
	err := webhooks{db: db}.inTx(ctx, func(tx *sql.Tx) error {
		// A write starts the InnoDB transaction, so INNODB_TRX lists it.
		if _, err := tx.ExecContext(ctx, "UPDATE webhook_endpoints SET attempts = attempts WHERE id = 0"); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT trx_isolation_level FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()").Scan(&level)
	})
	return level, err
}

// TestWebhooksReadCommitted (#24 item 7): every transaction of the MySQL
// webhook store runs at READ COMMITTED, set explicitly, whatever the
// server's default (REPEATABLE READ in InnoDB, which takes gap locks):
// InnoDB's own view of the transaction says so.
func TestWebhooksReadCommitted(t *testing.T) {
	t.Parallel()
	db := mysqltest.DB(t, 4).DB
	var global string
	if err := db.QueryRowContext(context.Background(), "SELECT @@GLOBAL.tx_isolation").Scan(&global); err != nil {
		t.Fatal(err)
	}
	level, err := mySQLTxIsolation(context.Background(), db)
	if err != nil || level != "READ COMMITTED" {
		t.Fatalf("the store's transactions run at %q (%v), want READ COMMITTED (server default %s)", level, err, global)
	}
}
