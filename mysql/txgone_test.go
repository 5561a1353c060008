package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqlcluster"
)

// TestTxRolledBackNotRetried: when InnoDB rolls a caller's transaction
// back under a …Tx call (here a deadlock, 1213, with the caller's
// transaction the lighter one, so the victim), the call is not retried in
// place — its statements would run in autocommit, outside any transaction
// — and answers holdfast.ErrTxRolledBack (issue 24 item 8). Nothing of the
// call or of the caller's earlier work is left.
func TestTxRolledBackNotRetried(t *testing.T) {
	if os.Getenv("HOLDFAST_TXGONE") == "" {
		// Flaky, cause unknown (2026-12-02): in about 1 run in 4 the watcher
		// never sees the other transaction's lock wait in INNODB_TRX before
		// it times out. Its sibling TestTxRolledBackOnTimeoutNotRetried
		// covers ErrTxRolledBack in CI meanwhile.
		t.Skip("flaky: set HOLDFAST_TXGONE=1 to run it")
	}
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
	// The watcher's own connection, taken before any lock: the engine's
	// workers share the pool, and one blocked behind the other
	// transaction's in-flight mark (for up to innodb_lock_wait_timeout)
	// must not leave the watcher waiting for a connection past the wait it
	// watches for.
	watch, err := e.db.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()

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
	// Long enough for the watcher to see the wait on a loaded machine (the
	// test server's 5 s ran out once before a poll of INNODB_TRX saw it);
	// the deadlock below ends the wait as soon as it is seen.
	if _, err := other.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 8"); err != nil {
		t.Fatal(err)
	}
	var otherThread int64 // the server is shared by parallel tests: watch this transaction's wait only
	if err := other.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&otherThread); err != nil {
		t.Fatal(err)
	}
	otherDone := make(chan error, 1)
	go func() {
		_, err := other.ExecContext(ctx, "SELECT id FROM txgone_a WHERE id = 1 FOR UPDATE")
		otherDone <- err
	}()
	for {
		var waiting int
		if err := watch.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id = ?", otherThread).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 1 {
			break
		}
		select {
		case err := <-otherDone:
			var dump string
			_ = watch.QueryRowContext(context.Background(), "SELECT COALESCE(GROUP_CONCAT(CONCAT(trx_mysql_thread_id, ':', trx_state)), '') FROM information_schema.INNODB_TRX").Scan(&dump)
			t.Fatalf("the other transaction (thread %d) ended before it was seen waiting for the caller's row: %v; transactions now: %s", otherThread, err, dump)
		default:
		}
		if ctx.Err() != nil {
			t.Fatal("the other transaction never waited for the caller's row")
		}
		time.Sleep(5 * time.Millisecond) // polling the condition, not timing it
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

// TestTxRolledBackOnTimeoutNotRetried: under innodb_rollback_on_timeout a
// lock wait timeout (1205) rolls the caller's whole transaction back. The
// …Tx call used to retry in place, where its statements ran in autocommit:
// once the lock was free the retry committed a hold on its own, which the
// caller's rollback could not undo. Now the call answers ErrTxRolledBack at
// once and nothing of it stays (issue 24 item 8). A private server: the
// option cannot be set at run time.
func TestTxRolledBackOnTimeoutNotRetried(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := mysqlcluster.Start(ctx, mysqlcluster.Options{Args: []string{"--innodb-rollback-on-timeout=ON"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Stop(context.Background()) })
	admin, err := sql.Open("mysql", cl.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE hf"); err != nil {
		t.Fatal(err)
	}
	cfg := cl.Config("hf")
	mysql.Configure(cfg)
	cfg.Params["innodb_lock_wait_timeout"] = "1"
	conn, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	c, err := mysql.New(db, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	n := 10
	if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	checkout := uuid.New()
	// Another transaction holds the checkout's in-flight mark: the call
	// waits for it and times out.
	other, err := db.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if _, err := other.ExecContext(ctx, "INSERT INTO reserve_inflight (shop_id, checkout_id) VALUES (?, ?)", k.ShopID, checkout[:]); err != nil {
		t.Fatal(err)
	}
	caller, err := db.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Rollback()
	var callerThread int64
	if err := caller.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&callerThread); err != nil {
		t.Fatal(err)
	}
	// Once the first wait timed out (the caller's thread waits no more, or
	// waits again in a retry), the other transaction lets go.
	released := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		waited := false
		for ctx.Err() == nil {
			select {
			case <-returned:
				released <- other.Rollback()
				return
			default:
			}
			var waiting int
			if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT'", callerThread).Scan(&waiting); err != nil {
				released <- err
				return
			}
			if waiting > 0 {
				waited = true
			} else if waited {
				break
			}
		}
		released <- other.Rollback()
	}()
	h, err := c.ReserveTx(ctx, caller, holdfast.ReserveParams{ShopID: k.ShopID, CheckoutID: checkout, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
	close(returned)
	if err := <-released; err != nil && !errors.Is(err, sql.ErrTxDone) {
		t.Fatal(err)
	}
	_ = caller.Rollback()
	var holds int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM holds").Scan(&holds); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, holdfast.ErrTxRolledBack) || holds != 0 {
		t.Fatalf("ReserveTx after InnoDB rolled the caller's transaction back on a lock wait timeout: %+v, %v; %d holds after the caller's rollback; want ErrTxRolledBack and none", h, err, holds)
	}
}
