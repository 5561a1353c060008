package mysqlcluster_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/holdfast/holdfast/mysql/mysqlcluster"
)

// TestStartRestartStop: a private server starts on its own port (never
// 3306) with a root password, runs as an unprivileged user when started by
// root, keeps its data across a crash and restart, and leaves nothing
// behind.
func TestStartRestartStop(t *testing.T) {
	if _, _, err := mysqlcluster.FindBinaries(); err != nil {
		t.Skip(err) // scripts/setup installs them; CI runs it
	}
	ctx := context.Background()
	c, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx) //nolint:errcheck
	if c.Port() == 3306 {
		t.Fatal("private server on the system port")
	}
	db, err := sql.Open("mysql", c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE kept.t (n INT PRIMARY KEY) ENGINE = InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO kept.t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	var datadir string
	if err := db.QueryRow("SELECT @@datadir").Scan(&datadir); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Clean(datadir), c.Dir()) {
		t.Fatalf("datadir %s outside %s", datadir, c.Dir())
	}
	if os.Geteuid() == 0 {
		st, err := os.Stat(filepath.Join(c.Dir(), "data"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Sys().(*syscall.Stat_t).Uid == 0 {
			t.Fatal("data directory owned by root: the server runs as root")
		}
	}
	// Wrong password is refused.
	bad, _ := sql.Open("mysql", "root:wrong@tcp(127.0.0.1:"+strconv.Itoa(c.Port())+")/")
	if err := bad.Ping(); err == nil {
		t.Fatal("root without the password was let in")
	}
	bad.Close()

	if err := c.Restart(ctx, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT n FROM kept.t").Scan(&n); err != nil || n != 42 {
		t.Fatalf("after crash and restart: %d %v", n, err)
	}
	dir := c.Dir()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temporary server left %s behind", dir)
	}
}
