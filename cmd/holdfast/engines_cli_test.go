package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/httpapi/httpbench"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqlcluster"
	"github.com/holdfast/holdfast/postgres/pgcluster"

	"github.com/holdfast/holdfast/wire"
)

// binDir holds the holdfast binary the tests of this file build once.
var binDir string

// holdfastBinary builds cmd/holdfast once per test binary.
var holdfastBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "holdfast-cli-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	return httpbench.Build(context.Background(), dir)
})

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cliEnv is the environment of a holdfast process: this one's without
// DATABASE_URL and HOLDFAST_*, plus env.
func cliEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DATABASE_URL=") || strings.HasPrefix(kv, envPrefix) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, env...)
}

// runBin runs the real holdfast binary with env and args.
func runBin(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin, err := holdfastBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cliEnv(env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("holdfast %q: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// readOnlyCommands are the commands that only read: on a database without
// holdfast's schema each must refuse and change nothing.
var readOnlyCommands = [][]string{
	{"keys", "list"},
	{"keys", "revoke", "1"},
	{"keys", "rotate", "1"},
	{"webhooks", "list", "--shop", "1"},
	{"webhooks", "dead-letters", "--shop", "1"},
	{"webhooks", "remove", "--shop", "1", "1"},
	{"holds", "--shop", "1"},
	{"ledger", "--shop", "1", "--item", "1", "--location", "1"},
	{"doctor"},
	{"top", "--once", "--interval", "100ms"},
	{"strategy", "set", "--shop", "1", "--item", "1", "--location", "1", "--strategy", "counter"},
	{"migrate", "--check"},
}

// shadowCommands never create the schema either (enroll, set and revert
// write rows into an existing one); they run on PostgreSQL only.
var shadowCommands = [][]string{
	{"shadow", "report"},
	{"shadow", "plan"},
	{"shadow", "samples", "--shop", "1"},
	{"shadow", "enroll", "--shop", "1"},
	{"shadow", "set", "--shop", "1", "--mode", "shadow"},
	{"shadow", "revert", "--shop", "1"},
}

// TestReadOnlyCommandsCreateNothing runs every read-only command of the
// real binary against an empty private database on each engine: each exits
// non-zero with one line that says to run holdfast migrate, and no table is
// created. Then migrate (the mysql:// URL too) creates the schema, and top
// and migrate --check work on it.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	ctx := context.Background()
	for _, engine := range []string{enginePostgres, engineMySQL} {
		t.Run(engine, func(t *testing.T) {
			var url string
			var tables func() int
			switch engine {
			case enginePostgres:
				c, err := pgcluster.Start(ctx, pgcluster.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Stop(context.Background()) })
				url = c.URL("postgres")
				tables = func() int {
					conn, err := pgx.Connect(ctx, url)
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close(ctx)
					var n int
					if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
						WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND c.relkind IN ('r', 'p', 'v', 'S'))
						+ (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
						WHERE n.nspname NOT IN ('pg_catalog', 'information_schema'))`).Scan(&n); err != nil {
						t.Fatal(err)
					}
					return n
				}
			case engineMySQL:
				c, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Stop(context.Background()) })
				admin, err := sql.Open("mysql", c.DSN(""))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { admin.Close() })
				if _, err := admin.ExecContext(ctx, "CREATE DATABASE empty"); err != nil {
					t.Fatal(err)
				}
				url = c.URL("empty")
				tables = func() int {
					var n int
					if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'empty'").Scan(&n); err != nil {
						t.Fatal(err)
					}
					return n
				}
			}
			env := []string{"DATABASE_URL=" + url}
			cmds := readOnlyCommands
			if engine == enginePostgres {
				cmds = append(append([][]string{}, readOnlyCommands...), shadowCommands...)
			}
			for _, args := range cmds {
				code, out, errOut := runBin(t, env, args...)
				msg := strings.TrimSpace(errOut)
				// strategy set and shadow enroll write rows: the message
				// must not say the command only reads.
				if code == 0 || !strings.Contains(msg, "run `holdfast migrate`") || strings.Contains(msg, "\n") || strings.Contains(msg, "only reads") ||
					strings.Contains(msg, ": migrate: ") || strings.Contains(msg, "migrations: ") {
					t.Errorf("%q on an empty database: exit %d, stdout %q, stderr %q; want non-zero and one line saying run `holdfast migrate`", args, code, out, errOut)
				}
				if n := tables(); n != 0 {
					t.Fatalf("%q on an empty database created %d tables (or functions)", args, n)
				}
			}

			if engine == engineMySQL {
				// shadow runs on PostgreSQL only: one line saying so, with a
				// mysql:// URL or --engine mariadb.
				for _, args := range append(shadowCommands, []string{"shadow", "report", "--engine", "mariadb"}) {
					code, out, errOut := runBin(t, env, args...)
					if msg := strings.TrimSpace(errOut); code != 1 || !strings.Contains(msg, ": shadow runs on PostgreSQL only;") || strings.Contains(msg, "\n") {
						t.Errorf("%q on MariaDB: exit %d, stdout %q, stderr %q; want exit 1 and one line saying shadow runs on PostgreSQL only", args, code, out, errOut)
					}
				}
				if n := tables(); n != 0 {
					t.Fatalf("shadow on MariaDB created %d tables", n)
				}
			}

			// A database migrate creates groups a batch's hold events from
			// the start (#29); --group-events on it changes nothing.
			if code, out, errOut := runBin(t, env, "migrate"); code != 0 || !strings.Contains(out, "applied migrations") || !strings.Contains(out, "grouped hold events: on") {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, errOut := runBin(t, env, "migrate", "--group-events"); code != 0 || !strings.Contains(out, "schema already current") || !strings.Contains(out, "grouped hold events: on") {
				t.Fatalf("migrate --group-events: exit %d\n%s%s", code, out, errOut)
			}
			if tables() == 0 {
				t.Fatal("migrate created no table")
			}
			for _, args := range [][]string{{"migrate", "--check"}, {"top", "--once", "--interval", "100ms"}, {"keys", "list"}, {"holds", "--shop", "1"}} {
				if code, out, errOut := runBin(t, env, args...); code != 0 {
					t.Errorf("%q after migrate: exit %d\n%s%s", args, code, out, errOut)
				} else if args[0] == "top" && !strings.Contains(out, "holdfast top") {
					t.Errorf("top --once draws no frame:\n%s", out)
				}
			}
		})
	}
}

// serveProc is a real `holdfast serve` process.
type serveProc struct {
	addr string
	cmd  *exec.Cmd
	log  string // its stderr's file
}

// startServeBin runs the real `holdfast serve` with args on a free port and
// waits (polling /readyz, with a deadline) until it answers.
func startServeBin(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	bin, err := holdfastBinary()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &serveProc{addr: ln.Addr().String(), log: filepath.Join(t.TempDir(), "serve.log")}
	ln.Close()
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(bin, append([]string{"serve", "--addr", s.addr, "--log-format", "text"}, args...)...)
	s.cmd.Env = cliEnv(env...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = s.cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-done:
			b, _ := os.ReadFile(s.log)
			t.Fatalf("serve exited before it was ready: %v\n%s", err, b)
		default:
		}
		resp, err := http.Get("http://" + s.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(s.log)
			t.Fatalf("serve not ready after 2 minutes:\n%s", b)
		}
		tick := time.NewTimer(100 * time.Millisecond)
		<-tick.C
	}
}

// call sends one API request and returns the status and body.
func (s *serveProc) call(t *testing.T, method, path, key, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+s.addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCommandsOnServeDataDir: with DATABASE_URL unset and a real `holdfast
// serve` running on a --data-dir, every command with that --data-dir uses
// the server's database on both engines (on MariaDB the private server of
// serve --engine mariadb: holds, ledger, doctor, top and migrate included);
// a new key runs the default strategy batch on both; holdfast strategy set
// and PUT …/strategy (admin keys only) change it.
func TestCommandsOnServeDataDir(t *testing.T) {
	for _, engine := range []string{enginePostgres, engineMySQL} {
		t.Run(engine, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "holdfast-cli-") // reachable by the server's user under root
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			flags := []string{"--data-dir", dir}
			if engine == engineMySQL {
				flags = append(flags, "--engine", engineMySQL)
			}
			srv := startServeBin(t, nil, flags...)
			cli := func(args ...string) string {
				t.Helper()
				code, out, errOut := runBin(t, nil, append(args, flags...)...)
				if code != 0 {
					t.Fatalf("%q: exit %d\n%s%s", args, code, out, errOut)
				}
				return out
			}
			shopKey := lastLine(cli("keys", "create", "--shop", "1"))
			adminKey := lastLine(cli("keys", "create", "--admin"))

			level := func(status int, body string) wire.Level {
				t.Helper()
				var l wire.Level
				if status != http.StatusOK {
					t.Fatalf("status %d: %s", status, body)
				}
				if err := json.Unmarshal([]byte(body), &l); err != nil {
					t.Fatalf("%v: %s", err, body)
				}
				return l
			}
			const inv = "/v1/shops/1/inventory/42/1"
			if l := level(srv.call(t, "PUT", inv, shopKey, `{"available": 10, "reason": "stocktake"}`)); l.Strategy != "batch" {
				t.Errorf("a new key on %s runs %q; README says batch is the default", engine, l.Strategy)
			}
			code, body := srv.call(t, "POST", "/v1/shops/1/reservations", shopKey,
				`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":42,"location_id":1,"quantity":2}]}`)
			if code != http.StatusCreated {
				t.Fatalf("reserve: %d %s", code, body)
			}

			if out := cli("holds", "--shop", "1"); !strings.Contains(out, "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42") {
				t.Errorf("holds does not list the server's hold:\n%s", out)
			}
			if out := cli("ledger", "--shop", "1", "--item", "42", "--location", "1"); !strings.Contains(out, "stocktake") {
				t.Errorf("ledger does not list the server's stock change:\n%s", out)
			}
			if out := cli("doctor"); !strings.Contains(out, "invariant") {
				t.Errorf("doctor:\n%s", out)
			} else if regexp.MustCompile(`(?m)^WARN\s+setting\.(isolation|checkpoints):`).MatchString(out) {
				// holdfast's own private servers run as its doctor recommends.
				t.Errorf("doctor on serve's own database warns of its settings:\n%s", out)
			}
			if out := cli("top", "--once", "--interval", "100ms"); !strings.Contains(out, "holdfast top") || !strings.Contains(out, "active 1") {
				t.Errorf("top --once does not show the server's one active hold:\n%s", out)
			}
			if out := cli("migrate"); !strings.Contains(out, "schema already current") {
				t.Errorf("migrate on the server's database:\n%s", out)
			}

			out := cli("strategy", "set", "--shop", "1", "--item", "42", "--location", "1", "--strategy", "counter")
			var l wire.Level
			if err := json.Unmarshal([]byte(out), &l); err != nil || l.Strategy != "counter" || l.Available != 10 || l.Held != 2 {
				t.Fatalf("strategy set --strategy counter: %v %q", err, out)
			}
			if l := level(srv.call(t, "GET", inv, shopKey, "")); l.Strategy != "counter" {
				t.Errorf("the server reads strategy %q after strategy set counter", l.Strategy)
			}
			if code, body := srv.call(t, "PUT", inv+"/strategy", shopKey, `{"strategy":"pool"}`); code != http.StatusForbidden || !strings.Contains(body, "admin key") {
				t.Errorf("PUT strategy with a shop key: %d %s; want 403 naming the admin key", code, body)
			}
			if code, body := srv.call(t, "PUT", inv+"/strategy", adminKey, `{"strategy":"fifo"}`); code != http.StatusUnprocessableEntity || !strings.Contains(body, `"strategy"`) {
				t.Errorf("PUT strategy fifo: %d %s; want 422 naming the field", code, body)
			}
			if l := level(srv.call(t, "PUT", inv+"/strategy", adminKey, `{"strategy":"pool","pool_cap":5}`)); l.Strategy != "pool" || l.Available != 10 || l.Held != 2 || l.Pooled > 5 {
				t.Errorf("PUT strategy pool cap 5: %+v", l)
			}
			if l := level(srv.call(t, "GET", inv, shopKey, "")); l.Strategy != "pool" {
				t.Errorf("GET after PUT strategy pool: %+v", l)
			}
			// A key never stocked: the strategy is stored and answered as
			// set, and a reservation still answers not_stocked.
			out = cli("strategy", "set", "--shop", "1", "--item", "43", "--location", "1", "--strategy", "counter")
			if err := json.Unmarshal([]byte(out), &l); err != nil || l.Strategy != "counter" {
				t.Errorf("strategy set --strategy counter on a key never stocked: %v %q", err, out)
			}
			if l := level(srv.call(t, "PUT", "/v1/shops/1/inventory/44/1/strategy", adminKey, `{"strategy":"counter"}`)); l.Strategy != "counter" {
				t.Errorf("PUT strategy counter on a key never stocked: %+v", l)
			}
			for _, item := range []string{"43", "44"} {
				code, body := srv.call(t, "POST", "/v1/shops/1/reservations", shopKey,
					`{"checkout_id":"`+uuid.NewString()+`","lines":[{"item_id":`+item+`,"location_id":1,"quantity":1}]}`)
				if code != http.StatusConflict || !strings.Contains(body, `"not_stocked"`) {
					t.Errorf("reserve item %s, only given a strategy: %d %s; want 409 not_stocked", item, code, body)
				}
			}
			if engine == engineMySQL {
				code, _, errOut := runBin(t, nil, append([]string{"strategy", "set", "--shop", "1", "--item", "42", "--location", "1", "--strategy", "slots"}, flags...)...)
				if code != 2 || !strings.Contains(errOut, "--strategy") {
					t.Errorf("strategy set slots on MariaDB: exit %d %q; want a usage error naming --strategy", code, errOut)
				}
			}
			if b, _ := os.ReadFile(srv.log); bytes.Contains(b, []byte("panic")) {
				t.Errorf("serve log:\n%s", b)
			}
		})
	}
}

// TestMariaDBServeDataDirAndMigrateFalse: a second serve --engine mariadb
// with the --data-dir of a running one refuses in one line and leaves the
// first's URL file, so the CLI still reaches the first; serve
// --engine mariadb --migrate=false serves a current schema and refuses a
// database without it in one line, as on PostgreSQL.
func TestMariaDBServeDataDirAndMigrateFalse(t *testing.T) {
	dir, err := os.MkdirTemp("", "holdfast-cli-") // reachable by the server's user under root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	first := startServeBin(t, nil, "--engine", engineMySQL, "--data-dir", dir)
	urlFile := filepath.Join(dir, mysqlURLFile)
	url, err := os.ReadFile(urlFile)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runBin(t, nil, "serve", "--engine", engineMySQL, "--data-dir", dir, "--addr", freeAddr(t))
	oneLineFailure(t, "a second serve --engine mariadb on one --data-dir", code, errOut, 1, "already runs with --data-dir "+dir)
	if again, err := os.ReadFile(urlFile); err != nil || !bytes.Equal(again, url) {
		t.Fatalf("the first serve's URL file after the second: %q, %v; want it unchanged", again, err)
	}
	if code, out, errOut := runBin(t, nil, "keys", "list", "--engine", engineMySQL, "--data-dir", dir); code != 0 {
		t.Fatalf("keys list on the first serve's --data-dir after a second serve: exit %d %q %q", code, out, errOut)
	}

	// --migrate=false: the first serve's database has the schema.
	u := strings.TrimSpace(string(url))
	startServeBin(t, []string{"DATABASE_URL=" + u}, "--migrate=false", "--data-dir", t.TempDir())
	// An empty database beside it has none: refused, nothing created.
	admin, err := sql.Open("mysql", mustMySQLDSN(t, u))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE empty_one"); err != nil {
		t.Fatal(err)
	}
	empty := strings.TrimSuffix(u, "/"+mysqlDatabaseName) + "/empty_one"
	code, _, errOut = runBin(t, []string{"DATABASE_URL=" + empty}, "serve", "--migrate=false", "--addr", freeAddr(t), "--data-dir", t.TempDir())
	oneLineFailure(t, "serve --migrate=false on MariaDB without the schema", code, errOut, 1, "run holdfast migrate; --migrate=false refuses to start on it")
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'empty_one'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("serve --migrate=false created %d tables (%v)", n, err)
	}
	_ = first
}

// mustMySQLDSN is the driver DSN of a mysql:// URL.
func mustMySQLDSN(t *testing.T, u string) string {
	t.Helper()
	cfg, err := mysql.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.FormatDSN()
}
