package pgcluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Files the cluster keeps in its data directory, beside pgdata.
const (
	passwordFileName = "password"     // the password of User, mode 0600
	portFileName     = "port"         // the port chosen on first start
	lockFileName     = "cluster.lock" // held while a process starts or stops the server
	leaseFileName    = "cluster.lease"
	// leaseFileName is held shared by every process that uses the
	// server; the one that can take it exclusively is the last user.
)

// lockPoll is how often a waiting process retries the start lock.
const lockPoll = 50 * time.Millisecond

// lock takes the start lock (waiting for another process's start or stop,
// bounded by ctx and StartTimeoutMax) and this process's lease.
func (c *Cluster) lock(ctx context.Context) error {
	var err error
	if c.lockF, err = c.openOwned(lockFileName); err != nil {
		return err
	}
	if c.leaseF, err = c.openOwned(leaseFileName); err != nil {
		return err
	}
	if err := flockWait(ctx, c.lockF, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("pgcluster: waiting for another process starting or stopping the server in %s: %w", c.dataDir, err)
	}
	// Nobody holds the lease exclusively without the start lock: this
	// does not wait.
	if err := syscall.Flock(int(c.leaseF.Fd()), syscall.LOCK_SH); err != nil {
		return fmt.Errorf("pgcluster: lease: %w", err)
	}
	return nil
}

func (c *Cluster) unlockStart() {
	if c.lockF != nil {
		_ = syscall.Flock(int(c.lockF.Fd()), syscall.LOCK_UN)
	}
}

func (c *Cluster) openOwned(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(c.dataDir, name), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	return f, nil
}

// flockWait takes a flock, polling so that ctx can end the wait.
func flockWait(ctx context.Context, f *os.File, how int) error {
	deadline := time.NewTimer(StartTimeoutMax)
	defer deadline.Stop()
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("timed out after %v", StartTimeoutMax)
		case <-tick.C:
		}
	}
}

// running reads pgdata/postmaster.pid and reports the server's pid and port
// when its process is alive.
func (c *Cluster) running() (pid, port int, ok bool) {
	f, err := os.Open(filepath.Join(c.dataDir, "pgdata", "postmaster.pid"))
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(lines) < 4 {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	if len(lines) < 4 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(lines[0])
	port, err2 := strconv.Atoi(lines[3])
	if err1 != nil || err2 != nil || pid <= 0 || !alive(pid) {
		return 0, 0, false
	}
	return pid, port, true
}

// attach uses the server another process started.
func (c *Cluster) attach(ctx context.Context, pid, port int) error {
	if err := c.loadPassword(ctx); err != nil {
		return err
	}
	c.pid, c.port, c.attached = pid, port, true
	if err := c.waitReady(ctx); err != nil {
		return fmt.Errorf("pgcluster: a server runs on %s (pid %d) but does not answer on 127.0.0.1:%d (%w); its log is %s",
			c.dataDir, pid, port, err, filepath.Join(c.dataDir, "postgres.log"))
	}
	return nil
}

// stopShared gives up this process's use of a shared server, and shuts it
// down when no other process uses it.
func (c *Cluster) stopShared(ctx context.Context) error {
	defer c.cleanup()
	if c.cmd == nil {
		defer close(c.done)
	}
	if err := flockWait(ctx, c.lockF, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("pgcluster: stop: %w", err)
	}
	if err := syscall.Flock(int(c.leaseF.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil // another process uses the server: it stays
	}
	if c.cmd != nil {
		c.stopOwned(ctx)
		return c.stopErr
	}
	// Another process started the server and has gone: signal it by pid.
	p, err := os.FindProcess(c.pid)
	if err != nil {
		return err
	}
	_ = p.Signal(syscall.SIGINT) // fast shutdown
	deadline := time.NewTimer(StartTimeoutMax / 2)
	defer deadline.Stop()
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for alive(c.pid) {
		select {
		case <-ctx.Done():
			_ = p.Signal(syscall.SIGQUIT)
			return ctx.Err()
		case <-deadline.C:
			_ = p.Signal(syscall.SIGQUIT)
			return fmt.Errorf("pgcluster: server pid %d did not stop within %v; sent SIGQUIT", c.pid, StartTimeoutMax/2)
		case <-tick.C:
		}
	}
	return nil
}

// alive reports whether a process with pid exists (EPERM: it exists but
// belongs to another user, as the server does when we run as root).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (c *Cluster) passwordFile() string { return filepath.Join(c.dataDir, passwordFileName) }

// newPassword generates the password and writes it, mode 0600, where initdb
// (running as the server's user) can read it.
func (c *Cluster) newPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	pw := base64.RawURLEncoding.EncodeToString(b)
	if err := os.WriteFile(c.passwordFile(), []byte(pw+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("pgcluster: write password file: %w", err)
	}
	if c.runAs != nil {
		if err := os.Chown(c.passwordFile(), int(c.runAs.Uid), int(c.runAs.Gid)); err != nil {
			return "", err
		}
	}
	return pw, nil
}

// loadPassword reads the password of an existing cluster. A cluster from
// before passwords (it trusted every local connection) gets one: set in
// single-user mode, with pg_hba.conf rewritten to require it.
func (c *Cluster) loadPassword(ctx context.Context) error {
	b, err := os.ReadFile(c.passwordFile())
	if err == nil {
		c.password = strings.TrimSpace(string(b))
		if c.password == "" {
			return fmt.Errorf("pgcluster: %s is empty", c.passwordFile())
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pgcluster: read password: %w", err)
	}
	if c.attached {
		return fmt.Errorf("pgcluster: the server running on %s has no password file; stop it and start again to secure it", c.dataDir)
	}
	pw, err := c.newPassword()
	if err != nil {
		return err
	}
	pgdata := filepath.Join(c.dataDir, "pgdata")
	// The password goes through stdin, never through argv or a log.
	stmt := strings.NewReader("ALTER ROLE " + User + " PASSWORD '" + pw + "'\n")
	if out, err := c.run(ctx, stmt, "postgres", "--single", "-D", pgdata, "-c", "password_encryption=scram-sha-256", "postgres"); err != nil {
		_ = os.Remove(c.passwordFile())
		return fmt.Errorf("pgcluster: set the password of the existing cluster in %s: %w\n%s", c.dataDir, err, out)
	}
	if err := c.writeHBA(pgdata); err != nil {
		return err
	}
	c.password = pw
	c.logf("the cluster in %s accepted local connections without a password; it now requires the one in %s", c.dataDir, c.passwordFile())
	return nil
}

// hba is the whole pg_hba.conf of a cluster: the password, everywhere.
const hba = `# holdfast: every connection needs the password (see ../password).
local   all   all                  scram-sha-256
host    all   all   127.0.0.1/32   scram-sha-256
host    all   all   ::1/128        scram-sha-256
`

func (c *Cluster) writeHBA(pgdata string) error {
	p := filepath.Join(pgdata, "pg_hba.conf")
	if err := os.WriteFile(p, []byte(hba), 0o600); err != nil {
		return fmt.Errorf("pgcluster: write pg_hba.conf: %w", err)
	}
	if c.runAs != nil {
		return os.Chown(p, int(c.runAs.Uid), int(c.runAs.Gid))
	}
	return nil
}

// choosePort returns the port saved in the data directory, or chooses and
// saves one. A temporary cluster takes any free port.
func (c *Cluster) choosePort() (int, error) {
	if c.temp {
		return freePort()
	}
	p := filepath.Join(c.dataDir, portFileName)
	b, err := os.ReadFile(p)
	switch {
	case err == nil:
		port, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || port < 1 || port > 65535 {
			return 0, fmt.Errorf("pgcluster: %s does not hold a port number; delete it to choose a new one", p)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return 0, fmt.Errorf("%w: 127.0.0.1:%d (saved in %s); stop that program, or delete the file to choose a new port", ErrPortInUse, port, p)
		}
		_ = l.Close()
		return port, nil
	case errors.Is(err, os.ErrNotExist):
		port, err := freePort()
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(p, []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
			return 0, fmt.Errorf("pgcluster: save port: %w", err)
		}
		return port, nil
	default:
		return 0, fmt.Errorf("pgcluster: read port: %w", err)
	}
}
