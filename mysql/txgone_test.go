package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// TestTxRolledBackNotRetried: when InnoDB rolls a caller's transaction
// back under a …Tx call (here a deadlock, 1213, with the caller's
// transaction the lighter one, so the victim), the call is not retried in
// place — its statements would run in autocommit, outside any transaction
// — and answers holdfast.ErrTxRolledBack (issue 24 item 8). Nothing of the
// call or of the caller's earlier work is left.
func TestTxRolledBackNotRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6, holdfast.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	for _, q := range []string{
		"CREATE TABLE txgone_a (id INT PRIMARY KEY) ENGINE = InnoDB",
		"CREATE TABLE txgone_b (id INT PRIMARY KEY) ENGINE = InnoDB",
		"INSERT INTO txgone_a VALUES (1)",
	} {
		if _, err := e.db.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	checkout := uuid.New()

	// The caller's transaction: its own work, then a row lock the other
	// transaction will wait for.
	caller, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Rollback()
	if _, err := caller.ExecContext(ctx, "SELECT id FROM txgone_a WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	// The other transaction: heavier (many rows written), holds the
	// checkout's in-flight mark, then waits for the caller's row.
	other, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if _, err := other.ExecContext(ctx, "INSERT INTO txgone_b SELECT seq FROM seq_1_to_500"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, "INSERT INTO reserve_inflight (shop_id, checkout_id) VALUES (?, ?)", k.ShopID, checkout[:]); err != nil {
		t.Fatal(err)
	}
	otherDone := make(chan error, 1)
	go func() {
		_, err := other.ExecContext(ctx, "SELECT id FROM txgone_a WHERE id = 1 FOR UPDATE")
		otherDone <- err
	}()
	for {
		var waiting int
		if err := e.db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the other transaction never waited for the caller's row")
		}
	}
	_, err = e.c.ReserveTx(ctx, caller, holdfast.ReserveParams{ShopID: k.ShopID, CheckoutID: checkout, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
	if !errors.Is(err, holdfast.ErrTxRolledBack) {
		t.Fatalf("ReserveTx in a transaction InnoDB rolled back: %v, want ErrTxRolledBack", err)
	}
	if err := <-otherDone; err != nil {
		t.Fatalf("the other transaction: %v", err)
	}
	if err := other.Rollback(); err != nil {
		t.Fatal(err)
	}
	var holds int
	if err := e.db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM holds").Scan(&holds); err != nil {
		t.Fatal(err)
	}
	if l := e.level(k); holds != 0 || l.Held != 0 {
		t.Fatalf("after the rolled-back call: %d holds, level %+v; want nothing held", holds, l)
	}
	e.checkInvariant()
}
