// Package pgcluster starts private PostgreSQL clusters from the locally
// installed server binaries: the embedded default that `holdfast demo` and
// `holdfast serve` run on when DATABASE_URL is unset, and the throwaway
// cluster that tests run on when TEST_DATABASE_URL is unset.
//
// PostgreSQL refuses to run as root. When the calling process is root, the
// cluster's files are owned by, and its server runs as, the unprivileged
// "postgres" system user.
//
// Every cluster requires a password (SCRAM-SHA-256) on TCP and on its
// socket: the password is generated at initdb and kept, mode 0600, in the
// data directory, beside the port the cluster was first started on. With
// Options.Shared, every process that starts a cluster in the same data
// directory uses one server: the first starts it, the others attach, and
// the last to stop shuts it down.
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoServer is returned when no PostgreSQL server binaries can be found.
var ErrNoServer = errors.New("pgcluster: no PostgreSQL server binaries found (looked for initdb on PATH, in `pg_config --bindir` and under /usr/lib/postgresql/*/bin); install them, e.g. `apt-get install postgresql` on Debian, or set DATABASE_URL")

// ErrNoCluster is returned by Start with Options.NoInit when the data
// directory holds no cluster yet.
var ErrNoCluster = errors.New("pgcluster: no cluster in the data directory")

// ErrPortInUse is returned when the port saved in the data directory is
// taken by a program other than the cluster's own server.
var ErrPortInUse = errors.New("pgcluster: the cluster's port is in use by another program")

// User is the database superuser every cluster is created with.
const User = "holdfast"

// StartTimeoutMax bounds how long Start waits for the server to accept
// connections, and Stop for it to exit after a fast shutdown.
const StartTimeoutMax = 60 * time.Second

// Options configures a cluster. The zero value is a cluster that is not
// durable (see Durable), in a new temporary directory that is removed on
// Stop: what tests want.
type Options struct {
	// DataDir holds the cluster. It is created and initialised when it does
	// not hold a cluster yet, and kept on Stop. Empty means a temporary
	// directory removed on Stop.
	DataDir string
	// Durable false initialises without syncing (initdb --no-sync) and turns
	// fsync, synchronous_commit and full_page_writes off: for tests only.
	// The zero value is not durable; callers that keep data set it.
	Durable bool
	// MaxConnections defaults to 300.
	MaxConnections int
	// Log receives one line per lifecycle step. Nil is silent. No line
	// carries the password.
	Log func(format string, args ...any)
	// Shared lets several processes use the cluster in DataDir at once:
	// Start attaches to the server already running on DataDir, or starts
	// it (on the port saved in DataDir) when none runs; Stop shuts the
	// server down only when no other process uses it. A shared server is
	// not tied to the process that started it. Requires DataDir.
	Shared bool
	// Logical sets wal_level = logical: the cluster can be the source of
	// a streamed shop move (pods, postgres/pgmove).
	Logical bool
	// NoInit makes Start fail with ErrNoCluster, instead of creating a
	// cluster, when DataDir holds none.
	NoInit bool
}

// Cluster is a running private PostgreSQL server. Every cluster requires
// password authentication (SCRAM-SHA-256) for user User, on TCP and on its
// socket; the generated password is kept in PasswordFile (mode 0600) and is
// part of URL. It is safe for concurrent use; Stop is idempotent.
type Cluster struct {
	dataDir  string
	temp     bool
	port     int
	password string
	bin      string
	runAs    *syscall.Credential
	cmd      *exec.Cmd // nil when attached to another process's server
	pid      int       // the server's process id
	done     chan struct{}
	logFile  *os.File

	shared        bool
	lockF, leaseF *os.File
	attached      bool
	logf          func(string, ...any)

	stopOnce sync.Once
	stopErr  error
}

// Start initialises (when needed) and starts a cluster, and returns once it
// accepts connections. With Options.Shared it attaches to the cluster's
// running server instead when there is one.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opts.Shared && opts.DataDir == "" {
		return nil, errors.New("pgcluster: Options.Shared needs a DataDir")
	}
	bin, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, done: make(chan struct{}), shared: opts.Shared, logf: logf}
	if os.Geteuid() == 0 {
		cred, err := unprivileged()
		if err != nil {
			return nil, err
		}
		c.runAs = cred
	}

	if opts.DataDir == "" {
		dir, err := os.MkdirTemp("", "holdfast-pg-")
		if err != nil {
			return nil, err
		}
		c.dataDir, c.temp = dir, true
	} else {
		abs, err := filepath.Abs(opts.DataDir)
		if err != nil {
			return nil, err
		}
		c.dataDir = abs
		pgdata := filepath.Join(abs, "pgdata")
		if opts.NoInit && !exists(filepath.Join(pgdata, "PG_VERSION")) {
			return nil, fmt.Errorf("%w %s", ErrNoCluster, abs)
		}
		if err := os.MkdirAll(c.dataDir, 0o700); err != nil {
			return nil, err
		}
	}
	if err := c.own(c.dataDir); err != nil {
		c.cleanup()
		return nil, err
	}
	if c.shared {
		if err := c.lock(ctx); err != nil {
			c.cleanup()
			return nil, err
		}
		// The start lock is held only while starting: it orders this
		// start against other processes' starts and last stops.
		defer c.unlockStart()
		if pid, port, ok := c.running(); ok {
			if err := c.attach(ctx, pid, port); err != nil {
				c.cleanup()
				return nil, err
			}
			logf("using the PostgreSQL server already running on %s (pid %d, 127.0.0.1:%d)", c.dataDir, pid, port)
			return c, nil
		}
	}
	if err := c.start(ctx, opts); err != nil {
		c.cleanup()
		return nil, err
	}
	return c, nil
}

// start initialises the cluster when needed and starts its server.
func (c *Cluster) start(ctx context.Context, opts Options) error {
	logf := c.logf
	pgdata := filepath.Join(c.dataDir, "pgdata")
	if !exists(filepath.Join(pgdata, "PG_VERSION")) {
		if opts.NoInit {
			return fmt.Errorf("%w %s", ErrNoCluster, c.dataDir)
		}
		logf("initialising PostgreSQL cluster in %s", pgdata)
		pw, err := c.newPassword()
		if err != nil {
			return err
		}
		args := []string{"-D", pgdata, "-U", User, "--auth=scram-sha-256", "--pwfile=" + c.passwordFile(), "-E", "UTF8", "--locale=C"}
		if !opts.Durable {
			args = append(args, "--no-sync")
		}
		if out, err := c.run(ctx, nil, "initdb", args...); err != nil {
			_ = os.Remove(c.passwordFile())
			if c.shared { // one line for commands: initdb's last words
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				return fmt.Errorf("pgcluster: initdb in %s: %w: %s", c.dataDir, err, strings.TrimSpace(lines[len(lines)-1]))
			}
			return fmt.Errorf("pgcluster: initdb: %w\n%s", err, out)
		}
		c.password = pw
	} else if err := c.loadPassword(ctx); err != nil {
		return err
	}

	port, err := c.choosePort()
	if err != nil {
		return err
	}
	c.port = port
	maxConns := opts.MaxConnections
	if maxConns == 0 {
		maxConns = 300
	}
	settings := []string{
		"listen_addresses=127.0.0.1",
		"port=" + strconv.Itoa(port),
		"unix_socket_directories=" + c.dataDir,
		"max_connections=" + strconv.Itoa(maxConns),
		"shared_buffers=256MB",
		"autovacuum_naptime=10s",
		"autovacuum_max_workers=6",
		"log_lock_waits=on",
		"shared_preload_libraries=pg_stat_statements",
		"pg_stat_statements.track=all",
		"compute_query_id=on",
		"max_locks_per_transaction=256",
		"jit=off",
		"password_encryption=scram-sha-256",
	}
	if opts.Logical {
		// A streamed move copies a shop's tables (about 25) each by a
		// table-sync worker, which must first wait for a consistent point
		// (the transactions running when its slot was made): more of them
		// at once hide that wait.
		// Each table sync holds a slot and a WAL sender while it copies;
		// tests move shops on one server in parallel.
		settings = append(settings, "wal_level=logical", "max_worker_processes=16",
			"max_logical_replication_workers=10", "max_sync_workers_per_subscription=6",
			"max_replication_slots=64", "max_wal_senders=64")
	}
	if opts.Durable {
		// Checkpoints on schedule, not every time 1 GB of WAL fills: after
		// each one the first change to every page writes the whole page to
		// WAL, and at the default the service soak (docs/PERFORMANCE.md)
		// checkpointed every 20 s and wrote mostly page images. The doctor's
		// setting.checkpoints check says the same of any server.
		settings = append(settings, "max_wal_size=4GB", "checkpoint_timeout=15min")
	} else {
		settings = append(settings, "fsync=off", "synchronous_commit=off", "full_page_writes=off")
	}
	args := []string{"-D", pgdata}
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	logPath := filepath.Join(c.dataDir, "postgres.log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	c.logFile = lf
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.runAs, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if c.shared {
		// A shared server outlives the process that started it: the last
		// process to use it stops it.
		cmd.SysProcAttr.Pdeathsig = 0
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgcluster: start postgres: %w", err)
	}
	c.cmd, c.pid = cmd, cmd.Process.Pid
	done := c.done
	go func() { _ = cmd.Wait(); close(done) }()

	if err := c.waitReady(ctx); err != nil {
		tail := "\n" + c.logTail()
		if c.shared {
			// Shared clusters serve commands: one line, no server log.
			tail = ""
		}
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-c.done
		return fmt.Errorf("pgcluster: the server in %s did not start (%w; its log is %s)%s", c.dataDir, err, logPath, tail)
	}
	logf("PostgreSQL listening on 127.0.0.1:%d (data in %s)", port, pgdata)
	return nil
}

// URL is the connection string for the given database on this cluster. It
// carries the password: do not log it.
func (c *Cluster) URL(database string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(User, c.password),
		Host: "127.0.0.1:" + strconv.Itoa(c.port), Path: "/" + database, RawQuery: "sslmode=disable"}
	return u.String()
}

// Port is the TCP port the cluster listens on (127.0.0.1 only). A cluster
// in a data directory keeps its port across restarts.
func (c *Cluster) Port() int { return c.port }

// DataDir is the directory that holds the cluster.
func (c *Cluster) DataDir() string { return c.dataDir }

// PasswordFile is the file (mode 0600) that holds the password of User.
func (c *Cluster) PasswordFile() string { return c.passwordFile() }

// Attached reports whether Start attached to a server another process
// started (Options.Shared) rather than starting one.
func (c *Cluster) Attached() bool { return c.attached }

// Done is closed when the server process this cluster started has exited.
// For an attached cluster (Attached), Stop closes it.
func (c *Cluster) Done() <-chan struct{} { return c.done }

// Stop shuts the server down (fast shutdown) and, for a temporary cluster,
// removes its files. A shared cluster's server is shut down only when no
// other process uses it. Safe to call more than once.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		if c.shared {
			c.stopErr = c.stopShared(ctx)
			return
		}
		c.stopOwned(ctx)
		c.cleanup()
	})
	return c.stopErr
}

// stopOwned fast-shuts-down the server this process started.
func (c *Cluster) stopOwned(ctx context.Context) {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
	t := time.NewTimer(StartTimeoutMax / 2)
	defer t.Stop()
	select {
	case <-c.done:
	case <-ctx.Done():
		_ = c.cmd.Process.Signal(syscall.SIGQUIT)
		<-c.done
		c.stopErr = ctx.Err()
	case <-t.C:
		_ = c.cmd.Process.Signal(syscall.SIGQUIT)
		<-c.done
	}
}

// Restart stops the server with the given mode ("fast" or "immediate") and
// starts it again on the same port and data. It is used by fault tests, on
// a server this process started.
func (c *Cluster) Restart(ctx context.Context, mode string) error {
	if c.cmd == nil {
		return errors.New("pgcluster: Restart of a server another process started")
	}
	sig := syscall.SIGINT
	if mode == "immediate" {
		sig = syscall.SIGQUIT
	}
	_ = c.cmd.Process.Signal(sig)
	<-c.done
	args := c.cmd.Args[1:]
	cmd := exec.Command(c.cmd.Path, args...)
	cmd.Stdout, cmd.Stderr = c.logFile, c.logFile
	cmd.SysProcAttr = c.cmd.SysProcAttr
	if err := cmd.Start(); err != nil {
		return err
	}
	c.cmd, c.pid = cmd, cmd.Process.Pid
	c.done = make(chan struct{})
	done := c.done
	go func() { _ = cmd.Wait(); close(done) }()
	return c.waitReady(ctx)
}

func (c *Cluster) cleanup() {
	if c.logFile != nil {
		_ = c.logFile.Close()
	}
	for _, f := range []*os.File{c.leaseF, c.lockF} {
		if f != nil {
			_ = f.Close() // closing drops the flock
		}
	}
	if c.temp && c.dataDir != "" {
		_ = os.RemoveAll(c.dataDir)
	}
}

func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(StartTimeoutMax)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return errors.New("postgres exited")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c.cmd == nil && !alive(c.pid) {
			return errors.New("postgres exited")
		}
		out, err := c.run(ctx, nil, "pg_isready", "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", User, "-d", "postgres")
		if err == nil {
			return nil
		}
		_ = out
		timer := time.NewTimer(50 * time.Millisecond)
		select {
		case <-timer.C:
		case <-c.done:
			return errors.New("postgres exited")
		}
	}
	return fmt.Errorf("timed out after %v", StartTimeoutMax)
}

func (c *Cluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.dataDir, "postgres.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (c *Cluster) run(ctx context.Context, stdin io.Reader, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Stdin = stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.runAs}
	cmd.Dir = os.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// own makes dir (and, for a temporary dir, nothing above it) usable by the
// user the server runs as.
func (c *Cluster) own(dir string) error {
	if c.runAs == nil {
		return nil
	}
	if err := os.Chown(dir, int(c.runAs.Uid), int(c.runAs.Gid)); err != nil {
		return err
	}
	// The server user must be able to reach dir through its parents.
	for p := filepath.Dir(dir); p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("pgcluster: the server runs as user postgres, which cannot enter %s (mode %v); choose a data directory outside it", p, st.Mode().Perm())
		}
	}
	return nil
}

// FindBinDir locates the directory with initdb and postgres: PATH first, then
// `pg_config --bindir`, then the newest /usr/lib/postgresql/*/bin.
func FindBinDir() (string, error) {
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	candidates = append(candidates, dirs...)
	for _, d := range candidates {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNoServer
}

func versionOf(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func unprivileged() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root, and PostgreSQL refuses root; no unprivileged \"postgres\" user to run it as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
