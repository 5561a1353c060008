package faulttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncer is a real PgBouncer (the Debian package's binary) in
// transaction pooling mode in front of a PostgreSQL server, listening on a
// free 127.0.0.1 port. Every database name is passed through to the server.
type PgBouncer struct {
	Port     int
	user     string
	password string
	dir      string
	cmd      *exec.Cmd
	done     chan struct{}
}

// ErrNoPgBouncer is returned when no pgbouncer binary is installed.
var ErrNoPgBouncer = errors.New("faulttest: pgbouncer not found (apt-get install pgbouncer; scripts/setup does)")

// PgBouncerInstalled reports whether a pgbouncer binary is installed.
func PgBouncerInstalled() bool {
	_, err := findPgBouncer()
	return err == nil
}

func findPgBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", ErrNoPgBouncer
}

// StartPgBouncer starts PgBouncer in front of the server of serverURL (a
// postgres:// URL; its user and password are used for the server login)
// and stops it when t ends. When running as root it runs as the "postgres"
// system user, with its files in a directory that user owns.
func StartPgBouncer(t testing.TB, serverURL string) *PgBouncer {
	t.Helper()
	bin, err := findPgBouncer()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(serverURL)
	if err != nil || u.Host == "" {
		t.Fatalf("pgbouncer: need a postgres:// URL, got %q", serverURL)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	b := &PgBouncer{user: u.User.Username(), done: make(chan struct{})}
	b.password, _ = u.User.Password()

	var cred *syscall.Credential
	base := ""
	if os.Geteuid() == 0 {
		pu, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgbouncer: running as root and no postgres user to run as: %v", err)
		}
		uid, _ := strconv.Atoi(pu.Uid)
		gid, _ := strconv.Atoi(pu.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		base = os.TempDir() // t.TempDir's parents may not be reachable by postgres
	}
	b.dir, err = os.MkdirTemp(base, "holdfast-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(b.dir) })
	if b.Port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = 12
reserve_pool_size = 0
server_reset_query =
server_check_delay = 0
server_login_retry = 1
ignore_startup_parameters = extra_float_digits,search_path
logfile = %s
admin_users = %s
`, host, port, b.Port, filepath.Join(b.dir, "users.txt"), filepath.Join(b.dir, "pgbouncer.log"), b.user)
	files := map[string]string{
		"pgbouncer.ini": ini,
		"users.txt":     fmt.Sprintf("%q %q\n", b.user, b.password),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(b.dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if cred != nil {
		for _, p := range []string{b.dir, filepath.Join(b.dir, "pgbouncer.ini"), filepath.Join(b.dir, "users.txt")} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.cmd = exec.Command(bin, filepath.Join(b.dir, "pgbouncer.ini"))
	// Pdeathsig: a test binary that dies without its cleanups (killed, or
	// its output pipe closed) takes its PgBouncer with it.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("pgbouncer: start: %v", err)
	}
	go func() { b.cmd.Wait(); close(b.done) }() //nolint:errcheck
	t.Cleanup(b.stop)
	if err := b.waitReady(u); err != nil {
		t.Fatalf("pgbouncer: %v\n%s", err, b.logTail())
	}
	return b
}

// PgBouncerExecMode is pgx's default_query_exec_mode for connections through
// PgBouncer: HOLDFAST_PGBOUNCER_EXEC_MODE, else exec. PgBouncer 1.18 has no
// protocol-level prepared statements in transaction mode, so only the modes
// with unnamed statements work: exec, cache_describe, describe_exec
// (simple_protocol too).
func PgBouncerExecMode() string {
	if m := os.Getenv("HOLDFAST_PGBOUNCER_EXEC_MODE"); m != "" {
		return m
	}
	return "exec"
}

// URL is a connection URL for database db through PgBouncer, with pgx's
// query exec mode set to PgBouncerExecMode.
func (b *PgBouncer) URL(db string) string {
	u := url.URL{Scheme: "postgres", Host: "127.0.0.1:" + strconv.Itoa(b.Port), Path: "/" + db}
	if b.password != "" {
		u.User = url.UserPassword(b.user, b.password)
	} else {
		u.User = url.User(b.user)
	}
	u.RawQuery = "sslmode=disable&default_query_exec_mode=" + PgBouncerExecMode()
	return u.String()
}

func (b *PgBouncer) waitReady(server *url.URL) error {
	db := strings.TrimPrefix(server.Path, "/")
	if db == "" {
		db = "postgres"
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-b.done:
			return errors.New("exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, b.URL(db))
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready: %w", err)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-b.done:
			t.Stop()
		case <-t.C:
		}
	}
}

func (b *PgBouncer) stop() {
	if b.cmd.Process != nil {
		// SIGTERM: immediate shutdown (SIGINT would wait for clients).
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

func (b *PgBouncer) logTail() string {
	data, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
