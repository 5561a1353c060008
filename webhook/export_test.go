package webhook

import (
	"context"
	"database/sql"
)

// MySQLTxIsolation is the isolation level InnoDB reports for a
// transaction of the MySQL store (inTx), for the tests.
func MySQLTxIsolation(ctx context.Context, db *sql.DB) (string, error) {
	var level string
	err := myStore{db: db}.inTx(ctx, func(tx *sql.Tx) error {
		// A write starts the InnoDB transaction, so INNODB_TRX lists it.
		if _, err := tx.ExecContext(ctx, "UPDATE webhook_endpoints SET attempts = attempts WHERE id = 0"); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT trx_isolation_level FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()").Scan(&level)
	})
	return level, err
}
