package main

import (
	"context"
	"database/sql"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/holdfast/holdfast/mysql/mysqlcluster"
)

func TestEngineUsageErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	cases := []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"demo", "--engine", "oracle"}, `unknown --engine "oracle"`},
		{"", []string{"demo", "--engine", "mariadb", "--strategy", "slots"}, "not offered on MariaDB"},
		{"", []string{"demo", "--engine", "mariadb", "--http"}, "--http runs on --engine postgres only"},
		{"", []string{"demo", "--scenario", "migration", "--engine", "mariadb"}, "--engine applies to --scenario flash-sale only"},
		{"", []string{"bench", "--engine", "mariadb", "--soak"}, "--soak and --replot run on --engine postgres only"},
		{"mysql://u:secret@127.0.0.1:1/db", []string{"demo", "--engine", "postgres"}, "--engine postgres with a mysql:// DATABASE_URL"},
		{"postgres://u:secret@127.0.0.1:1/db", []string{"doctor", "--engine", "mariadb"}, "--engine mariadb needs DATABASE_URL unset"},
		{"", []string{"serve", "--engine", "mariadb", "--addr", "127.0.0.1:0", "--legacy", "redis://127.0.0.1:1/0"}, "--legacy runs on --engine postgres only"},
		{"postgres://u:secret@127.0.0.1:1/db", []string{"serve", "--engine", "mariadb", "--addr", "127.0.0.1:0"}, "--engine mariadb needs DATABASE_URL unset"},
		{"", []string{"keys", "list", "--engine", "oracle"}, `unknown --engine "oracle"`},
	}
	for _, c := range cases {
		t.Setenv("DATABASE_URL", c.env)
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "secret") {
			t.Errorf("%q (DATABASE_URL %q): exit %d, stderr %q; want 2 and %q", c.args, c.env, code, errOut, c.want)
		}
	}
	// HOLDFAST_ENGINE sets --engine.
	t.Setenv("DATABASE_URL", "")
	t.Setenv("HOLDFAST_ENGINE", "oracle")
	if code, _, errOut := run(t, "demo"); code != 2 || !strings.Contains(errOut, `unknown --engine "oracle"`) {
		t.Errorf("HOLDFAST_ENGINE=oracle: exit %d %q", code, errOut)
	}
	t.Setenv("HOLDFAST_ENGINE", "")
	// doctor without DATABASE_URL and without a serve --engine mariadb on
	// its --data-dir: it says what it needs, and starts nothing.
	dir := t.TempDir()
	if code, _, errOut := run(t, "doctor", "--engine", "mariadb", "--data-dir", dir); code != 1 || !strings.Contains(errOut, "no private MariaDB of holdfast serve in "+dir) || !strings.Contains(errOut, "DATABASE_URL=mysql://") {
		t.Errorf("doctor --engine mariadb without DATABASE_URL: exit %d %q", code, errOut)
	}
}

// TestMariaDBDemoOneFlag: `holdfast demo --engine mariadb` with
// DATABASE_URL unset runs the flash sale on a private throwaway MariaDB and
// ends with the invariant check.
func TestMariaDBDemoOneFlag(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	code, out, errOut := run(t, "demo", "--engine", "mariadb", "--buyers", "300", "--units", "60", "--concurrency", "16", "--ttl", "1s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"via the Go library on MariaDB", "invariant      OK", "oversold            0", "errors              0"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// Every unit is accounted for: claimed ones are gone from available.
	m := regexp.MustCompile(`claimed\s+(\d+)`).FindStringSubmatch(out)
	a := regexp.MustCompile(`stock now\s+available (\d+), held 0`).FindStringSubmatch(out)
	if m == nil || a == nil {
		t.Fatalf("summary lacks claimed or stock now with nothing held:\n%s", out)
	}
	claimed, _ := strconv.Atoi(m[1])
	avail, _ := strconv.Atoi(a[1])
	if claimed < 1 || claimed > 60 || avail != 60-claimed {
		t.Errorf("claimed %d, available %d of 60", claimed, avail)
	}
}

// TestMariaDBDoctorAndBench: a mysql:// DATABASE_URL selects the MySQL
// engine without --engine. doctor reports the MariaDB checks and, with an
// idle transaction left open on purpose, an idle-transaction finding;
// bench --engine mariadb runs and passes its audits.
func TestMariaDBDoctorAndBench(t *testing.T) {
	ctx := context.Background()
	c, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) }) //nolint:errcheck
	admin, err := sql.Open("mysql", c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE cli"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", c.URL("cli"))
	t.Setenv("HOLDFAST_ENGINE", "")

	// doctor only reads: the schema comes from migrate.
	if code, out, errOut := run(t, "migrate"); code != 0 || !strings.Contains(out, "applied migrations") {
		t.Fatalf("migrate: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := run(t, "doctor")
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"purge.history_list_length", "setting.isolation", "setting.innodb_lock_wait_timeout", "connections.by_caller", "ok       invariant: pooled + held <= available"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "transactions.idle") {
		t.Fatalf("doctor reports an idle transaction before one is opened:\n%s", out)
	}

	conn, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK") //nolint:errcheck
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, out, errOut = run(t, "doctor", "--idle-in-transaction", "1s", "--json")
		if code != 0 {
			t.Fatalf("doctor --json: exit %d\n%s\n%s", code, out, errOut)
		}
		if strings.Contains(out, `"check": "transactions.idle"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no idle transaction finding after 90 s:\n%s", out)
		}
		tick := time.NewTimer(200 * time.Millisecond)
		<-tick.C
	}
	if strings.Contains(out+errOut, strings.Split(strings.TrimPrefix(c.URL(""), "mysql://root:"), "@")[0]) {
		t.Fatal("doctor's output carries the database password")
	}

	// bench prints its table to the process's stdout; its exit status says
	// whether every run passed its audit.
	stdout := os.Stdout
	devnull, _ := os.Open(os.DevNull)
	os.Stdout = devnull
	code, _, errOut = run(t, "bench", "--engine", "mariadb", "--scenarios", "hot,hot-tx", "--strategies", "counter,batch", "--clients", "2", "--duration", "300ms")
	os.Stdout = stdout
	devnull.Close()
	if code != 0 {
		t.Fatalf("bench --engine mariadb: exit %d\n%s", code, errOut)
	}
}

// TestKeysMariaDBWithoutServe: keys --engine mariadb with DATABASE_URL
// unset and no serve running on --data-dir says what to do, exit 1, and
// starts nothing.
func TestKeysMariaDBWithoutServe(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	code, _, errOut := run(t, "keys", "list", "--engine", "mariadb", "--data-dir", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "start `holdfast serve --engine mariadb` with this --data-dir first") {
		t.Errorf("keys list --engine mariadb without serve: exit %d %q", code, errOut)
	}
}
