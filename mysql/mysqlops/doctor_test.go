package mysqlops_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqlops"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

func TestCallerOf(t *testing.T) {
	for q, want := range map[string]string{
		"/* app='holdfast',route='reserve' */ SELECT 1": "holdfast/reserve",
		"  /* route='claim' */ UPDATE t SET a = 1":      "claim",
		"/* app='shop' */ SELECT 1":                     "shop",
		"SELECT 1":                                      "untagged",
		"/* just a comment */ SELECT 1":                 "untagged",
		"":                                              "",
		// A hostile route, escaped by the writer, comes back whole.
		sqltext.Prefix("it's */ x", "") + "SELECT 1": "holdfast/it's */ x",
	} {
		if got := mysqlops.CallerOf(q); got != want {
			t.Errorf("CallerOf(%q) = %q, want %q", q, got, want)
		}
	}
}

// conn pins one connection of db for a test's session.
func conn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Raw(func(any) error { return nil }); c.Close() })
	return c
}

func exec(t *testing.T, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, stmt string, args ...any) {
	t.Helper()
	if _, err := q.ExecContext(context.Background(), stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// setGlobal sets a global server variable for the test and restores it
// after.
func setGlobal(t *testing.T, db *sql.DB, names []string, value any) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		var old string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL."+name).Scan(&old); err != nil {
			continue // absent on this server (tx_isolation vs transaction_isolation)
		}
		exec(t, db, fmt.Sprintf("SET GLOBAL %s = ?", name), value)
		t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), fmt.Sprintf("SET GLOBAL %s = ?", name), old) })
		return
	}
	t.Fatalf("none of %v exists on the server", names)
}

func find(rep *health.Report, check string, sev health.Severity, contains string) *health.Finding {
	for _, f := range rep.Find(check) {
		if f.Severity == sev && strings.Contains(f.Message, contains) {
			return &f
		}
	}
	return nil
}

var isolationVars = []string{"transaction_isolation", "tx_isolation"}

// TestDoctorFindsTrouble puts a private MariaDB into trouble on purpose — a
// transaction left idle holding a row lock, a tagged caller waiting behind
// it, a snapshot holding back purge while rows are updated, the global
// isolation and lock wait timeout off the recommendations — and expects a
// finding for each, none of which a healthy server shows. It changes
// server-wide settings, so it does not run in parallel.
func TestDoctorFindsTrouble(t *testing.T) {
	ctx := context.Background()
	d := mysqltest.DB(t, 10)
	eng, err := mysql.New(d.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	ten := 10
	if _, err := eng.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &ten, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	exec(t, d.DB, "CREATE TABLE trouble (id INT PRIMARY KEY, v INT NOT NULL)")
	exec(t, d.DB, "INSERT INTO trouble VALUES (1, 0), (2, 0)")
	cfg := mysqlops.DoctorConfig{
		Engine:                eng,
		TransactionWarn:       time.Second,
		IdleInTransactionWarn: time.Second,
		LockWaitWarn:          time.Second,
		HistoryWarn:           250,
		Samples:               3,
		SampleInterval:        20 * time.Millisecond,
	}

	// Healthy: recommended settings, nothing open.
	setGlobal(t, d.DB, isolationVars, "READ-COMMITTED")
	setGlobal(t, d.DB, []string{"innodb_lock_wait_timeout"}, 5)
	rep, err := mysqlops.Doctor(ctx, d.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append([]string{"setting.isolation", "setting.innodb_lock_wait_timeout", "connections.by_caller", "purge.history_list_length"}, health.Groups...) {
		if len(rep.Find(c)) == 0 {
			t.Errorf("healthy: no %s finding:\n%s", c, rep.Text())
		}
	}
	if rep.Count(health.SeverityCritical) != 0 || len(rep.Find("transactions.idle"))+len(rep.Find("transactions.long"))+len(rep.Find("locks")) != 0 ||
		find(rep, "setting.isolation", health.SeverityOK, "READ-COMMITTED") == nil || find(rep, "invariant", health.SeverityOK, "") == nil {
		t.Fatalf("healthy server: unexpected findings:\n%s", rep.Text())
	}

	// Trouble.
	setGlobal(t, d.DB, isolationVars, "REPEATABLE-READ")
	setGlobal(t, d.DB, []string{"innodb_lock_wait_timeout"}, 50)
	idle := conn(t, d.DB)
	var idleID int64
	if err := idle.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&idleID); err != nil {
		t.Fatal(err)
	}
	exec(t, idle, "BEGIN")
	exec(t, idle, "UPDATE trouble SET v = v + 1 WHERE id = 1")
	t.Cleanup(func() { _, _ = idle.ExecContext(context.Background(), "ROLLBACK") })

	waiter := conn(t, d.DB)
	exec(t, waiter, "SET SESSION innodb_lock_wait_timeout = 300")
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.ExecContext(ctx, "/* app='shop',route='checkout' */ UPDATE trouble SET v = v + 1 WHERE id = 1")
		waited <- err
	}()

	snap := conn(t, d.DB)
	exec(t, snap, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
	var v int
	if err := snap.QueryRowContext(ctx, "SELECT v FROM trouble WHERE id = 2").Scan(&v); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = snap.ExecContext(context.Background(), "ROLLBACK") })
	for range 300 {
		exec(t, d.DB, "UPDATE trouble SET v = v + 1 WHERE id = 2")
	}

	// The ages grow past their 1 s thresholds: poll, with a generous bound.
	deadline := time.Now().Add(90 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if rep, err = mysqlops.Doctor(ctx, d.DB, cfg); err != nil {
			t.Fatal(err)
		}
		if len(rep.Find("transactions.idle")) > 0 && len(rep.Find("locks.waits")) > 0 && len(rep.Find("transactions.long")) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no idle, long and lock-wait findings after 90 s:\n%s", rep.Text())
		}
		<-tick.C
	}
	t.Logf("\n%s", rep.Text())
	want := []struct {
		check    string
		sev      health.Severity
		contains string
	}{
		{"transactions.idle", health.SeverityWarn, fmt.Sprintf("thread %d ", idleID)},
		{"locks.waits", health.SeverityWarn, "caller shop/checkout"},
		{"transactions.long", health.SeverityWarn, "caller shop/checkout"},
		{"purge.history_list_length", health.SeverityWarn, "history list length"},
		{"setting.isolation", health.SeverityWarn, "REPEATABLE-READ"},
		{"setting.innodb_lock_wait_timeout", health.SeverityWarn, "50 s"},
		{"invariant", health.SeverityOK, "on all"},
	}
	for _, w := range want {
		if find(rep, w.check, w.sev, w.contains) == nil {
			t.Errorf("no %s %s finding with %q", w.sev, w.check, w.contains)
		}
	}
	if n, err := mysqlops.HistoryListLength(ctx, d.DB); err != nil || n < 300 {
		t.Errorf("history list length %d (%v) with a snapshot open across 300 updates; want >= 300", n, err)
	}

	exec(t, idle, "ROLLBACK")
	if err := <-waited; err != nil {
		t.Errorf("the waiting caller, once the idle transaction ended: %v", err)
	}
}
