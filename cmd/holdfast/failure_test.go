package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/holdfast/holdfast/httpapi/httpbench"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqlcluster"
	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// oneLineFailure checks a failure's answer: exit status want, one line on
// stderr naming each of wants, no driver dump, Go internals or usage hint
// (unless a usage error, exit 2).
func oneLineFailure(t *testing.T, what string, code int, errOut string, want int, wants ...string) {
	t.Helper()
	bad := []string{"strconv.", "tls error", "dial error", "failed to connect to `", "httpapi:", "context canceled"}
	if want != 2 {
		bad = append(bad, "--help")
	}
	ok := code == want && strings.Count(strings.TrimSpace(errOut), "\n") == map[bool]int{true: 1, false: 0}[want == 2]
	for _, w := range wants {
		ok = ok && strings.Contains(errOut, w)
	}
	for _, b := range bad {
		ok = ok && !strings.Contains(errOut, b)
	}
	if !ok {
		t.Errorf("%s: exit %d, stderr %q; want %d, one line with %q and none of %q", what, code, errOut, want, wants, bad)
	}
}

// withPassword is u with its password replaced.
func withPassword(t *testing.T, u, pw string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.UserPassword(p.User.Username(), pw)
	return p.String()
}

// twoHosts names u's host twice: a multi-host connection string.
func twoHosts(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.Host = p.Host + "," + p.Host
	return p.String()
}

// TestFailuresAreOneLine: a database that refuses the password or is not
// listening, a taken port and unparsable flag values each answer one line
// that says what failed and what to check — exit 1 for a failure to run
// (doctor's 2 is for critical findings only), 2 for a usage error — on
// PostgreSQL and on MariaDB.
func TestFailuresAreOneLine(t *testing.T) {
	ctx := context.Background()
	t.Setenv("HOLDFAST_ENGINE", "")
	pg, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	my, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = my.Stop(context.Background()) })
	admin, err := sql.Open("mysql", my.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE cli"); err != nil {
		t.Fatal(err)
	}
	closed := freeAddr(t) // nothing listens there

	for _, c := range []struct {
		name, url string
		wants     []string
	}{
		{"postgres wrong password", withPassword(t, pg.URL("postgres"), "wrong-pw"), []string{"refused the login of user", "check the user and password in DATABASE_URL"}},
		// Without sslmode, pgx tries TLS first and its error adds "tls
		// error: server refused TLS connection": not the cause.
		{"postgres wrong password, default sslmode", strings.TrimSuffix(withPassword(t, pg.URL("postgres"), "wrong-pw"), "?sslmode=disable"), []string{"refused the login of user"}},
		// Two hosts (the same server twice), both refusing: whichever
		// answer comes (one host's refusal, or Follow's verdict that every
		// host refused), it says the login was refused.
		{"postgres wrong password, two hosts", twoHosts(t, withPassword(t, pg.URL("postgres"), "wrong-pw")), []string{"refused the login of user \"holdfast\"", "check the user, password and database in DATABASE_URL"}},
		{"postgres not listening", "postgres://holdfast:pw@" + closed + "/postgres", []string{"cannot connect to PostgreSQL at " + closed + " (connection refused)", "is the server running?"}},
		{"mariadb wrong password", withPassword(t, my.URL("cli"), "wrong-pw"), []string{"MySQL/MariaDB refused the login", "check the user and password in DATABASE_URL"}},
		{"mariadb not listening", "mysql://root:pw@" + closed + "/cli", []string{"cannot connect to MySQL/MariaDB at " + closed + " (connection refused)"}},
	} {
		t.Setenv("DATABASE_URL", c.url)
		for _, args := range [][]string{{"doctor"}, {"keys", "list"}} {
			code, out, errOut := run(t, args...)
			oneLineFailure(t, c.name+": "+strings.Join(args, " "), code, errOut, 1, c.wants...)
			if strings.Contains(out+errOut, "wrong-pw") {
				t.Errorf("%s: the password is in the output", c.name)
			}
		}
	}

	// A taken port: serve says which flag to change, before any database.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("DATABASE_URL", "")
	code, _, errOut := run(t, "serve", "--addr", ln.Addr().String(), "--data-dir", t.TempDir())
	oneLineFailure(t, "serve on a taken port", code, errOut, 1, "--addr "+ln.Addr().String()+" is already in use", "pass another --addr")
	code, _, errOut = run(t, "serve", "--addr", freeAddr(t), "--metrics-addr", ln.Addr().String(), "--data-dir", t.TempDir())
	oneLineFailure(t, "serve --metrics-addr on a taken port", code, errOut, 1, "--metrics-addr "+ln.Addr().String()+" is already in use")

	// Values a flag cannot take: what it takes, not Go's parse error.
	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"keys", "create", "--shop", "abc"}, []string{`--shop "abc": must be a whole number`}},
		{[]string{"serve", "--max-conns", "1e3"}, []string{`--max-conns "1e3": must be a whole number`}},
		{[]string{"bench", "--duration", "5"}, []string{`--duration "5": must be a duration with a unit`}},
		{[]string{"keys", "revoke", ""}, []string{"keys revoke takes a key id (a number from keys list) or the key itself"}},
		{[]string{"keys", "rotate", "abc"}, []string{"keys rotate takes a key id"}},
	} {
		code, _, errOut := run(t, c.args...)
		oneLineFailure(t, strings.Join(c.args, " "), code, errOut, 2, c.wants...)
	}
	t.Setenv("HOLDFAST_MAX_CONNS", "many")
	code, _, errOut = run(t, "serve")
	oneLineFailure(t, "HOLDFAST_MAX_CONNS=many serve", code, errOut, 2, `HOLDFAST_MAX_CONNS="many" (--max-conns) must be a whole number`)
}

// TestDemoInterruptAndTopWithoutTerminal runs the real binary: Ctrl-C
// (SIGINT) in the middle of the demo's sale prints the partial summary
// with the invariant, exits 130 and says "interrupted", never "context
// canceled"; top with stdout not a terminal prints one frame without
// screen control codes and exits.
func TestDemoInterruptAndTopWithoutTerminal(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("HOLDFAST_ENGINE", "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := httpbench.Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	demo := exec.CommandContext(ctx, bin, "demo", "--buyers", "1000000", "--concurrency", "4")
	stdout, err := demo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	demo.Stderr = &errb
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() { // the sale has started: its first line
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "flash sale:") {
			break
		}
	}
	if err := demo.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	err = demo.Wait()
	code := demo.ProcessState.ExitCode()
	if code != exitInterrupted || !strings.Contains(out.String(), "summary, interrupted after") || !strings.Contains(out.String(), "invariant      OK") ||
		!strings.Contains(errb.String(), "holdfast demo: interrupted after") || strings.Contains(out.String()+errb.String(), "context canceled") {
		t.Fatalf("demo interrupted: exit %d (%v)\nstdout:\n%s\nstderr:\n%s", code, err, out.String(), errb.String())
	}

	pg, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	env := append(os.Environ(), "DATABASE_URL="+pg.URL("postgres"))

	// Early interrupts, with every buyer paying: claims are in flight when
	// Ctrl-C comes, and one that committed but answered "canceled" is an
	// unknown outcome, read back — never an error that breaks the check.
	// At the first progress line that counts a claim, four times.
	for i := range 4 {
		code, out, errOut := interruptDemo(t, ctx, bin, env, true, "--concurrency", "64", "--pay", "1", "--fail", "0")
		if code != exitInterrupted || !strings.Contains(out, "invariant      OK") || !strings.Contains(out, "  unknown ") ||
			strings.Contains(out+errOut, "BROKEN") || strings.Contains(out+errOut, "context canceled") {
			t.Fatalf("demo interrupted early (run %d): exit %d\nstdout:\n%s\nstderr:\n%s", i, code, out, errOut)
		}
	}
	// MariaDB: the same, and no driver log line leaks.
	my, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = my.Stop(context.Background()) })
	admin, err := sql.Open("mysql", my.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE demo"); err != nil {
		t.Fatal(err)
	}
	myEnv := append(os.Environ(), "DATABASE_URL="+my.URL("demo"))
	for i := range 2 {
		code, out, errOut := interruptDemo(t, ctx, bin, myEnv, true, "--concurrency", "64", "--pay", "1", "--fail", "0")
		if code != exitInterrupted || !strings.Contains(out, "invariant      OK") || !strings.Contains(out, "  unknown ") ||
			!strings.Contains(out, "errors              0") || strings.Contains(errOut, "[mysql]") || strings.Contains(out+errOut, "context canceled") {
			t.Fatalf("MariaDB demo interrupted early (run %d): exit %d\nstdout:\n%s\nstderr:\n%s", i, code, out, errOut)
		}
	}
	mig := exec.CommandContext(ctx, bin, "migrate")
	mig.Env = env
	if b, err := mig.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, b)
	}
	top := exec.CommandContext(ctx, bin, "top", "--interval", "100ms")
	top.Env = env
	var topOut, topErr bytes.Buffer
	top.Stdout, top.Stderr = &topOut, &topErr
	err = top.Run() // stdout is a pipe; ctx bounds a top that never ends
	if err != nil || strings.Contains(topOut.String(), "\x1b[") || !strings.Contains(topOut.String(), "HOTTEST KEYS") ||
		!strings.Contains(topErr.String(), "stdout is not a terminal: printing one frame") {
		t.Fatalf("top without a terminal: %v\nstdout %q\nstderr %q", err, topOut.String(), topErr.String())
	}
}

// interruptDemo runs the demo with env and args, sends Ctrl-C (SIGINT) at
// the sale's first line, or at its first progress line that counts a
// claim when atProgress, and returns its exit status and output.
func interruptDemo(t *testing.T, ctx context.Context, bin string, env []string, atProgress bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	demo := exec.CommandContext(ctx, bin, append([]string{"demo", "--buyers", "1000000"}, args...)...)
	demo.Env = env
	outPipe, err := demo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := demo.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	started, claiming := make(chan struct{}), make(chan struct{})
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(outDone)
		sc := bufio.NewScanner(outPipe)
		once := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !once && strings.HasPrefix(sc.Text(), "flash sale:") {
				once = true
				close(started)
			}
		}
	}()
	go func() {
		defer close(errDone)
		sc := bufio.NewScanner(errPipe)
		once := false
		for sc.Scan() {
			errb.WriteString(sc.Text() + "\n")
			if f := strings.Fields(sc.Text()); !once && len(f) > 5 && f[0] == "buyers" && f[4] == "claimed" && f[5] != "0" {
				once = true
				close(claiming)
			}
		}
	}()
	at := started
	if atProgress {
		at = claiming
	}
	select {
	case <-at:
	case <-outDone:
		<-errDone
		_ = demo.Wait()
		t.Fatalf("demo ended before the interrupt: exit %d\nstdout:\n%s\nstderr:\n%s", demo.ProcessState.ExitCode(), out.String(), errb.String())
	}
	if err := demo.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-outDone
	<-errDone
	_ = demo.Wait()
	return demo.ProcessState.ExitCode(), out.String(), errb.String()
}

// TestMySQLURLWithoutDatabase: a mysql:// URL without /dbname makes
// migrate, serve and demo answer at once, in one line, that the URL names
// no database — not that another process holds the migration lock (its
// name was NULL); the library's migrations.Up says so too.
func TestMySQLURLWithoutDatabase(t *testing.T) {
	ctx := context.Background()
	t.Setenv("HOLDFAST_ENGINE", "")
	my, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = my.Stop(context.Background()) })
	u := strings.TrimSuffix(my.URL("x"), "/x")
	if strings.HasSuffix(my.URL("x"), u) || !strings.HasPrefix(u, "mysql://") {
		t.Fatalf("cannot strip the database from %q", my.URL("x"))
	}
	t.Setenv("DATABASE_URL", u)
	for _, args := range [][]string{{"migrate"}, {"serve", "--addr", freeAddr(t), "--data-dir", t.TempDir()}, {"demo", "--buyers", "1"}} {
		code, _, errOut := run(t, args...)
		oneLineFailure(t, strings.Join(args, " ")+" with no database in the URL", code, errOut, 1, "DATABASE_URL names no database: add /dbname")
		if strings.Contains(errOut, "migration lock") {
			t.Errorf("%q: %q", args, errOut)
		}
	}
	db, err := sql.Open("mysql", my.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := migrations.Up(ctx, db); !errors.Is(err, migrations.ErrNoDatabase) {
		t.Fatalf("migrations.Up without a database: %v; want ErrNoDatabase", err)
	}
}
