package galera_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/mysql/mysqlops"
)

// TestDoctorGalera: the doctor grades a Galera node: Synced in the primary
// component is fine; innodb_flush_log_at_trx_commit other than 1 is
// critical; and writes through two nodes — here the failure that makes
// holdfast require one writer: a row locked FOR UPDATE on node 1 is
// updated and committed through node 2, and node 1's transaction then
// fails at COMMIT with 1213 — show as galera.writers.
func TestDoctorGalera(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	db1 := open(t, c, 0, "")
	find := func() map[string]health.Finding {
		t.Helper()
		rep, err := mysqlops.Doctor(ctx, db1, mysqlops.DoctorConfig{Samples: 1})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]health.Finding{}
		for _, f := range rep.Findings {
			out[f.Check] = f
		}
		return out
	}
	f := find()
	if f["galera.component"].Severity != health.SeverityOK {
		t.Fatalf("galera.component: %+v", f["galera.component"])
	}
	if g, ok := f["galera.durability"]; ok {
		t.Fatalf("galera.durability on a node with innodb_flush_log_at_trx_commit = 1: %+v", g)
	}

	if _, err := db1.ExecContext(ctx, "SET GLOBAL innodb_flush_log_at_trx_commit = 2"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db1.ExecContext(ctx, "SET GLOBAL innodb_flush_log_at_trx_commit = 1") })
	if g := find()["galera.durability"]; g.Severity != health.SeverityCritical {
		t.Fatalf("galera.durability with innodb_flush_log_at_trx_commit = 2: %+v", g)
	}
	if _, err := db1.ExecContext(ctx, "SET GLOBAL innodb_flush_log_at_trx_commit = 1"); err != nil {
		t.Fatal(err)
	}

	// Two writers.
	for _, s := range []string{
		"CREATE DATABASE IF NOT EXISTS twowriters",
		"CREATE TABLE IF NOT EXISTS twowriters.units (id INT PRIMARY KEY, taken INT NOT NULL DEFAULT 0)",
		"REPLACE INTO twowriters.units VALUES (1, 0)",
	} {
		if _, err := db1.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	// wsrep_sync_wait: node 2 reads after node 1's insert is applied.
	db2 := open(t, c, 1, "twowriters", "wsrep_sync_wait", "1")
	tx1, err := db1.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int
	if err := tx1.QueryRowContext(ctx, "SELECT id FROM twowriters.units WHERE taken = 0 LIMIT 1 FOR UPDATE SKIP LOCKED").Scan(&id); err != nil {
		t.Fatal(err)
	}
	tx2, err := db2.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var id2 int
	if err := tx2.QueryRowContext(ctx, "SELECT id FROM units WHERE taken = 0 LIMIT 1 FOR UPDATE SKIP LOCKED").Scan(&id2); err != nil {
		t.Fatalf("node 2 skipped the row node 1 holds? %v", err)
	}
	if id2 != id {
		t.Fatalf("node 2 took row %d, node 1 holds %d", id2, id)
	}
	if _, err := tx2.ExecContext(ctx, "UPDATE units SET taken = 2 WHERE id = ?", id2); err != nil {
		t.Fatal(err)
	}
	if err := tx2.Commit(); err != nil {
		t.Fatalf("node 2's commit of the row node 1 holds: %v", err)
	}
	_, err = tx1.ExecContext(ctx, "UPDATE twowriters.units SET taken = 1 WHERE id = ?", id)
	if err == nil {
		err = tx1.Commit()
	} else {
		_ = tx1.Rollback()
	}
	var me *mysqldriver.MySQLError
	if !errors.As(err, &me) || me.Number != 1213 {
		t.Fatalf("node 1's transaction on the row node 2 took: %v, want 1213 (deadlock: certification failure)", err)
	}
	if g := find()["galera.writers"]; g.Severity != health.SeverityWarn {
		t.Fatalf("galera.writers after writes through two nodes: %+v", g)
	}
}

func open(t *testing.T, c interface {
	Config(int, string) *mysqldriver.Config
}, node int, database string, params ...string) *sql.DB {
	t.Helper()
	cfg := c.Config(node, database)
	cfg.ReadTimeout, cfg.WriteTimeout = 0, 0
	cfg.Params = map[string]string{}
	for i := 0; i+1 < len(params); i += 2 {
		cfg.Params[params[i]] = params[i+1]
	}
	conn, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}
