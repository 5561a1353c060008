package mysqlstore

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestServiceReadCommitted: the API-key store's transactions set their
// isolation, READ COMMITTED like every holdfast transaction on MySQL,
// instead of taking the server's default (REPEATABLE READ, whose next-key
// locks on a rotation's locking read block key inserts): a row committed
// by another connection during the transaction is read by its next
// statement (issue 24 item 8).
func TestServiceReadCommitted(t *testing.T) {
	t.Parallel()
	d := mysqltest.DB(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range []string{"CREATE TABLE iso_seen (id INT PRIMARY KEY, n INT NOT NULL)", "INSERT INTO iso_seen VALUES (1, 0)"} {
		if _, err := d.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var before, after int
	err := Service(d.DB).inTx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT n FROM iso_seen WHERE id = 1").Scan(&before); err != nil {
			return err
		}
		if _, err := d.DB.ExecContext(ctx, "UPDATE iso_seen SET n = 1 WHERE id = 1"); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT n FROM iso_seen WHERE id = 1").Scan(&after)
	})
	if err != nil {
		t.Fatal(err)
	}
	if before != 0 || after != 1 {
		t.Fatalf("the store's transaction read %d then %d across another connection's commit of 1: it reads from a snapshot (REPEATABLE READ), want READ COMMITTED", before, after)
	}
}
