package pgcluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// logLines collects a cluster's lifecycle lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// dataDir is a directory the server's user can reach when tests run as
// root (t.TempDir's parents are 0700).
func dataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func start(t *testing.T, opts pgcluster.Options) *pgcluster.Cluster {
	t.Helper()
	c, err := pgcluster.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

func query(t *testing.T, u, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(context.Background(), sql).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPasswordRequired: a connection without the password is refused, on
// TCP and on the socket; the password file is 0600; no log line has it.
func TestPasswordRequired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var log logLines
	c := start(t, pgcluster.Options{Log: log.logf})

	if got := query(t, c.URL("postgres"), "SELECT current_user"); got != pgcluster.User {
		t.Fatalf("current_user = %q", got)
	}
	st, err := os.Stat(c.PasswordFile())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("password file mode %v, want 0600", st.Mode().Perm())
	}
	pw, err := os.ReadFile(c.PasswordFile())
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(pw))
	if len(password) < 24 || !strings.Contains(c.URL("x"), password) {
		t.Fatalf("password %d chars; URL carries it: %v", len(password), strings.Contains(c.URL("x"), password))
	}

	port := strconv.Itoa(c.Port())
	refused := map[string]string{
		"tcp, no password":    "postgres://holdfast@127.0.0.1:" + port + "/postgres?sslmode=disable",
		"tcp, wrong password": "postgres://holdfast:wrong@127.0.0.1:" + port + "/postgres?sslmode=disable",
		"tcp, other user":     "postgres://postgres@127.0.0.1:" + port + "/postgres?sslmode=disable",
		"socket, no password": "postgres://holdfast@/postgres?host=" + url.QueryEscape(c.DataDir()) + "&port=" + port,
	}
	for name, u := range refused {
		conn, err := pgx.Connect(ctx, u)
		if err == nil {
			conn.Close(ctx)
			t.Errorf("%s: connected", name)
			continue
		}
		if !strings.Contains(err.Error(), "password") && !strings.Contains(err.Error(), "28P01") && !strings.Contains(err.Error(), "28000") {
			t.Errorf("%s: refused for another reason: %v", name, err)
		}
	}
	// The right password on the socket works.
	sock := "postgres://holdfast:" + url.QueryEscape(password) + "@/postgres?host=" + url.QueryEscape(c.DataDir()) + "&port=" + port
	if got := query(t, sock, "SELECT current_user"); got != pgcluster.User {
		t.Fatalf("socket current_user = %q", got)
	}
	if strings.Contains(log.String(), password) {
		t.Fatalf("a log line carries the password:\n%s", log.String())
	}
}

// TestShared: on one data directory, commands started while a holder runs
// use the holder's server (no second database); the server outlives a
// process that started it while others use it; the last user stops it; the
// port is the same on every start.
func TestShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := dataDir(t)

	if _, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: dir, Shared: true, NoInit: true}); !errors.Is(err, pgcluster.ErrNoCluster) {
		t.Fatalf("NoInit on an empty directory: %v, want ErrNoCluster", err)
	}

	var log logLines
	holder := start(t, pgcluster.Options{DataDir: dir, Shared: true, Durable: true, Log: log.logf})
	if holder.Attached() {
		t.Fatal("the first process attached to nothing")
	}
	port := holder.Port()
	started := query(t, holder.URL("postgres"), "SELECT pg_postmaster_start_time()::text")
	conn, err := pgx.Connect(ctx, holder.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE seen (v text); INSERT INTO seen VALUES ('from holder')"); err != nil {
		t.Fatal(err)
	}

	// Two commands at once on the same directory, while the holder runs.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: dir, Shared: true, NoInit: true})
			if err != nil {
				errs <- err
				return
			}
			defer c.Stop(ctx) //nolint:errcheck
			if !c.Attached() || c.Port() != port {
				errs <- fmt.Errorf("command: attached %v, port %d, want the holder's %d", c.Attached(), c.Port(), port)
				return
			}
			cc, err := pgx.Connect(ctx, c.URL("postgres"))
			if err != nil {
				errs <- err
				return
			}
			defer cc.Close(ctx)
			var v, st string
			if err := cc.QueryRow(ctx, "SELECT v, pg_postmaster_start_time()::text FROM seen").Scan(&v, &st); err != nil {
				errs <- err
				return
			}
			if v != "from holder" || st != started {
				errs <- fmt.Errorf("command sees %q on a server started %s, want the holder's (%s)", v, st, started)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The commands stopped; the holder's server still answers.
	if _, err := conn.Exec(ctx, "INSERT INTO seen VALUES ('after')"); err != nil {
		t.Fatalf("holder after the commands stopped: %v", err)
	}
	conn.Close(ctx)

	// A reader attaches; the holder (which started the server) stops
	// first: the server stays for the reader, who, last, stops it.
	reader := start(t, pgcluster.Options{DataDir: dir, Shared: true, NoInit: true})
	if err := holder.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := query(t, reader.URL("postgres"), "SELECT count(*)::text FROM seen"); got != "2" {
		t.Fatalf("reader after the holder left: %s rows", got)
	}
	if err := reader.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		c.Close()
		t.Fatal("the last user stopped, the server still listens")
	}

	// A later start is on the same port, with the same data.
	again := start(t, pgcluster.Options{DataDir: dir, Shared: true, NoInit: true})
	if again.Attached() || again.Port() != port {
		t.Fatalf("restart: attached %v, port %d, want %d", again.Attached(), again.Port(), port)
	}
	if got := query(t, again.URL("postgres"), "SELECT count(*)::text FROM seen"); got != "2" {
		t.Fatalf("after restart: %s rows", got)
	}
	if err := again.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// Another program on the saved port: one clear line, no server log.
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = pgcluster.Start(ctx, pgcluster.Options{DataDir: dir, Shared: true})
	if !errors.Is(err, pgcluster.ErrPortInUse) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("port taken: %q, want one line wrapping ErrPortInUse", err)
	}
	pw, _ := os.ReadFile(holder.PasswordFile())
	if p := strings.TrimSpace(string(pw)); p == "" || strings.Contains(log.String(), p) {
		t.Fatalf("password missing or logged:\n%s", log.String())
	}
}
