// Package mysqlcluster starts private MariaDB servers from the locally
// installed server binaries (mariadb-install-db and mariadbd): the throwaway
// server that the MySQL engine's tests run on when TEST_MYSQL_URL is unset,
// and the embedded default of `holdfast … --engine mariadb` when
// DATABASE_URL is unset.
//
// A server gets its own data directory, TCP port (127.0.0.1 only) and
// socket, and starts with --no-defaults, so the system's /etc/mysql
// configuration and a system service on port 3306 are never touched. MariaDB
// dislikes running as root: when the calling process is root, the server's
// files are owned by, and the server runs as, the unprivileged "mysql" system
// user (or "nobody" when there is none).
//
// The root account of a new server gets a random password, set before Start
// returns; URL and DSN carry it.
package mysqlcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ErrNoServer is returned when no MariaDB server binaries can be found.
var ErrNoServer = errors.New("mysqlcluster: no MariaDB server binaries found (looked for mariadb-install-db and mariadbd on PATH and in /usr/sbin, /usr/bin); install them, e.g. `apt-get install --no-install-recommends mariadb-server` on Debian (the system service need not run), or set TEST_MYSQL_URL / DATABASE_URL")

// ReadyTimeout bounds how long Start waits for a new server to accept
// connections: generous, for slow shared CI machines.
const ReadyTimeout = 90 * time.Second

// Options configures a server. The zero value is a non-durable server in a
// new temporary directory that is removed on Stop.
type Options struct {
	// DataDir holds the server's files. It is created and initialised when
	// it does not hold a data directory yet, and kept on Stop. Empty means a
	// temporary directory removed on Stop.
	DataDir string
	// Durable false relaxes InnoDB's log flushing and doublewrite buffer:
	// for tests only. Callers that keep data set it.
	Durable bool
	// MaxConnections defaults to 300.
	MaxConnections int
	// BufferPool is innodb_buffer_pool_size in bytes. Defaults to 256 MiB.
	BufferPool int64
	// ReadCommitted starts the server with transaction_isolation =
	// READ-COMMITTED, the setting holdfast recommends (its doctor's
	// setting.isolation): holdfast sets READ COMMITTED on its own
	// transactions anyway, but a caller's transaction begun with the
	// server's default gets this. holdfast's own private servers (serve,
	// demo, bench --engine mariadb) set it; tests keep MariaDB's default.
	ReadCommitted bool
	// Log receives one line per lifecycle step. Nil is silent.
	Log func(format string, args ...any)
	// Args are further server options, after the defaults (a test's
	// --innodb-rollback-on-timeout, say).
	Args []string
}

// Cluster is a running private MariaDB server. It is safe for concurrent
// use; Stop is idempotent.
type Cluster struct {
	dir       string // holds data/, run/ and the error log
	temp      bool
	port      int
	password  string
	runAs     *syscall.Credential
	serverBin string
	args      []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// Start initialises (when needed) and starts a server, and returns once it
// accepts connections with its root password set.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	installBin, serverBin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{serverBin: serverBin, done: make(chan struct{})}
	if os.Geteuid() == 0 {
		if c.runAs, err = unprivileged(); err != nil {
			return nil, err
		}
	}
	if opts.DataDir == "" {
		dir, err := os.MkdirTemp("", "holdfast-maria-")
		if err != nil {
			return nil, err
		}
		c.dir, c.temp = dir, true
	} else {
		if c.dir, err = filepath.Abs(opts.DataDir); err != nil {
			return nil, err
		}
	}
	data, run, tmp := filepath.Join(c.dir, "data"), filepath.Join(c.dir, "run"), filepath.Join(c.dir, "tmp")
	for i, d := range []string{c.dir, data, run, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			c.cleanup()
			return nil, err
		}
		if err := c.own(d, i == 0); err != nil {
			c.cleanup()
			return nil, err
		}
	}
	passFile := filepath.Join(c.dir, "root-password")
	fresh := false
	if _, err := os.Stat(filepath.Join(data, "mysql")); err != nil {
		logf("initialising MariaDB data directory in %s", data)
		// Its own tmpdir: concurrent installs sharing /tmp collided on
		// temporary table files.
		out, err := c.runCmd(ctx, installBin, "--no-defaults", "--datadir="+data, "--tmpdir="+tmp,
			"--auth-root-authentication-method=normal", "--skip-test-db")
		if err != nil {
			c.cleanup()
			return nil, fmt.Errorf("mysqlcluster: mariadb-install-db: %w\n%s", err, tail(out))
		}
		fresh = true
	} else {
		b, err := os.ReadFile(passFile)
		if err != nil {
			return nil, fmt.Errorf("mysqlcluster: %s holds a server but no root-password file: %w", c.dir, err)
		}
		c.password = string(bytes.TrimSpace(b))
	}

	if c.port, err = freePort(); err != nil {
		c.cleanup()
		return nil, err
	}
	maxConns := opts.MaxConnections
	if maxConns == 0 {
		maxConns = 300
	}
	bufferPool := opts.BufferPool
	if bufferPool == 0 {
		bufferPool = 256 << 20
	}
	c.args = []string{
		"--no-defaults",
		"--datadir=" + data,
		"--tmpdir=" + tmp,
		"--socket=" + filepath.Join(run, "mariadb.sock"),
		"--port=" + strconv.Itoa(c.port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(run, "mariadb.pid"),
		"--log-error=" + filepath.Join(c.dir, "error.log"),
		"--skip-name-resolve",
		"--max-connections=" + strconv.Itoa(maxConns),
		"--innodb-buffer-pool-size=" + strconv.FormatInt(bufferPool, 10),
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_bin",
		"--default-time-zone=+00:00",
		"--innodb-lock-wait-timeout=10",
	}
	if opts.ReadCommitted {
		c.args = append(c.args, "--transaction-isolation=READ-COMMITTED")
	}
	if !opts.Durable {
		c.args = append(c.args, "--innodb-flush-log-at-trx-commit=2", "--innodb-doublewrite=0", "--sync-binlog=0")
	}
	c.args = append(c.args, opts.Args...)
	if err := c.start(); err != nil {
		c.cleanup()
		return nil, err
	}
	if fresh {
		if err := c.waitReady(ctx); err != nil {
			return nil, c.fail(err)
		}
		pw := make([]byte, 16)
		_, _ = rand.Read(pw)
		password := hex.EncodeToString(pw)
		if err := c.exec(ctx, "ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '"+password+"'"); err != nil {
			return nil, c.fail(err)
		}
		c.password = password
		if err := os.WriteFile(passFile, []byte(password+"\n"), 0o600); err != nil {
			return nil, c.fail(err)
		}
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, c.fail(err)
	}
	logf("MariaDB listening on 127.0.0.1:%d (data in %s)", c.port, data)
	return c, nil
}

func (c *Cluster) fail(err error) error {
	log := c.logTail()
	_ = c.Stop(context.Background())
	return fmt.Errorf("mysqlcluster: server did not start: %w\n%s", err, log)
}

func (c *Cluster) start() error {
	cmd := exec.Command(c.serverBin, c.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.runAs, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mysqlcluster: start mariadbd: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.mu.Lock()
	c.cmd, c.done = cmd, done
	c.mu.Unlock()
	return nil
}

// Config is the go-sql-driver configuration for database on this server,
// as root.
func (c *Cluster) Config(database string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = "root", c.password
	cfg.Net, cfg.Addr = "tcp", "127.0.0.1:"+strconv.Itoa(c.port)
	cfg.DBName = database
	return cfg
}

// DSN is the go-sql-driver data source name for database on this server.
func (c *Cluster) DSN(database string) string { return c.Config(database).FormatDSN() }

// URL is the mysql:// URL for database on this server (the DATABASE_URL
// form).
func (c *Cluster) URL(database string) string {
	return fmt.Sprintf("mysql://root:%s@127.0.0.1:%d/%s", c.password, c.port, database)
}

// Port is the TCP port the server listens on (127.0.0.1 only).
func (c *Cluster) Port() int { return c.port }

// Dir is the directory that holds the server's data and logs.
func (c *Cluster) Dir() string { return c.dir }

// Done is closed when the server process has exited.
func (c *Cluster) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// Stop shuts the server down and, for a temporary server, removes its
// files. Safe to call more than once.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		c.stopErr = c.halt(ctx, syscall.SIGTERM)
		c.cleanup()
	})
	return c.stopErr
}

// Restart stops the server (SIGTERM: clean shutdown; SIGKILL: a crash) and
// starts it again on the same port and data. Fault tests use it.
func (c *Cluster) Restart(ctx context.Context, sig syscall.Signal) error {
	if err := c.halt(ctx, sig); err != nil {
		return err
	}
	if err := c.start(); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// haltTimeout bounds a clean shutdown before the server is killed.
const haltTimeout = 60 * time.Second

func (c *Cluster) halt(ctx context.Context, sig syscall.Signal) error {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	c.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	timer := time.NewTimer(haltTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return ctx.Err()
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
		return nil
	}
}

func (c *Cluster) cleanup() {
	if c.temp && c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// readyPoll is the interval between readiness probes.
const readyPoll = 50 * time.Millisecond

func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	done := c.Done()
	var last error
	for {
		db, err := sql.Open("mysql", c.DSN(""))
		if err == nil {
			err = db.PingContext(ctx)
			db.Close()
		}
		if err == nil {
			return nil
		}
		last = err
		t := time.NewTimer(readyPoll)
		select {
		case <-done:
			t.Stop()
			return errors.New("mariadbd exited")
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-t.C:
		}
	}
}

func (c *Cluster) exec(ctx context.Context, stmt string) error {
	db, err := sql.Open("mysql", c.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

func (c *Cluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "error.log"))
	return tail(b)
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (c *Cluster) runCmd(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.runAs}
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// own makes dir usable by the user the server runs as; reach checks that
// the user can get to it through its parents.
func (c *Cluster) own(dir string, reach bool) error {
	if c.runAs == nil {
		return nil
	}
	if err := os.Chown(dir, int(c.runAs.Uid), int(c.runAs.Gid)); err != nil {
		return err
	}
	for p := filepath.Dir(dir); reach && p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("mysqlcluster: the server runs as an unprivileged user, which cannot enter %s (mode %v); choose a data directory outside it", p, st.Mode().Perm())
		}
	}
	return nil
}

// FindBinaries locates mariadb-install-db and mariadbd: PATH first, then
// /usr/sbin and /usr/bin (Debian puts mariadbd in /usr/sbin, which is not
// on every PATH).
func FindBinaries() (install, server string, err error) {
	find := func(name string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p
			}
		}
		return ""
	}
	install, server = find("mariadb-install-db"), find("mariadbd")
	if install == "" || server == "" {
		return "", "", ErrNoServer
	}
	return install, server, nil
}

func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"mysql", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("mysqlcluster: running as root, and no unprivileged \"mysql\" or \"nobody\" user to run MariaDB as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
