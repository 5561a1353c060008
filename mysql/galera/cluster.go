// Package galera starts a private three-node MariaDB Galera cluster on
// 127.0.0.1 (Debian's galera-4 provider and mariadb-server's wsrep) for
// holdfast's failover tests, and implements failovertest.Cluster on it.
//
// holdfast writes through exactly one node (docs/OPERATIONS.md, "MariaDB:
// high availability"): URL names every node, in a fixed order, and the MySQL
// engine's multi-host connector (mysql/galerahosts.go) writes to the first
// node that is Synced in the primary component. Losing the writer is
// therefore losing node 1 (or whichever node currently comes first among
// the healthy ones):
//
//   - Kill: kill -9 of the writer's mariadbd. Heal recovers its position
//     (mariadbd --wsrep-recover) and restarts it; it rejoins by IST.
//   - Freeze: SIGSTOP of the writer's processes. The other two evict it
//     (evs timeouts shortened for tests) and keep a primary component. Heal
//     thaws it; it rejoins by itself.
//   - Switchover: a planned hand-over: the writer is desynced and rejects
//     queries (wsrep_desync, wsrep_reject_queries=ALL_KILL, which also kills
//     its client connections), so every client moves to the next node. Heal
//     puts it back.
//
// Heal returns once all three nodes are Synced in one primary component;
// clients then move back to node 1 (the fixed order).
//
// The servers run as the unprivileged "mysql" user when the caller is root,
// with --no-defaults, so the system's configuration and services are never
// touched.
package galera

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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/holdfast/holdfast/failovertest"
	"github.com/holdfast/holdfast/mysql/mysqlcluster"
)

// Provider is the Galera library Debian's galera-4 package installs.
const Provider = "/usr/lib/galera/libgalera_smm.so"

// ErrNoGalera is returned when the Galera provider is not installed.
var ErrNoGalera = errors.New("galera: " + Provider + " not found; install Debian's galera-4 and rsync (scripts/setup does)")

// Nodes is the cluster's size: three, so that losing one leaves a majority.
const Nodes = 3

// SyncTimeout bounds waiting for the cluster to be whole (every node Synced
// in one primary component): generous, for a loaded machine.
const SyncTimeout = 3 * time.Minute

// Options configures a cluster. The zero value is usable.
type Options struct {
	// Log receives one line per lifecycle step. Nil is silent.
	Log func(format string, args ...any)
	// BufferPool is innodb_buffer_pool_size per node. Defaults to 128 MiB.
	BufferPool int64
}

// Cluster is a running private Galera cluster. Its methods are safe for
// concurrent use except Inject and Heal, which the failover runner calls in
// turn.
type Cluster struct {
	dir        string
	password   string
	runAs      *syscall.Credential
	bin        string
	bufferPool int64
	logf       func(string, ...any)
	nodes      [Nodes]*node

	mu      sync.Mutex
	pending *fault // what Heal must undo

	probeOnce sync.Once
	probeDBs  []*sql.DB // per node, for Probe
}

type fault struct {
	kind failovertest.Kind
	node int
}

type node struct {
	c     *Cluster
	i     int // 0-based
	dir   string
	port  int
	gport int // group communication
	iport int // IST receive
	sport int // SST receive

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	_ failovertest.Cluster = (*Cluster)(nil)
	_ failovertest.Prober  = (*Cluster)(nil)
)

// Start initialises and starts a three-node cluster and returns once every
// node is Synced in one primary component, with the root password set.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if _, err := os.Stat(Provider); err != nil {
		return nil, ErrNoGalera
	}
	if _, err := exec.LookPath("rsync"); err != nil {
		return nil, ErrNoGalera
	}
	installBin, serverBin, err := mysqlcluster.FindBinaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: serverBin, logf: opts.Log}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	if os.Geteuid() == 0 {
		if c.runAs, err = unprivileged(); err != nil {
			return nil, err
		}
	}
	if c.dir, err = os.MkdirTemp("", "holdfast-galera-"); err != nil {
		return nil, err
	}
	if err := os.Chmod(c.dir, 0o755); err != nil {
		return nil, c.abort(err)
	}
	ports, err := freePorts(4 * Nodes)
	if err != nil {
		return nil, c.abort(err)
	}
	for i := range c.nodes {
		n := &node{c: c, i: i, dir: filepath.Join(c.dir, fmt.Sprintf("node%d", i+1)),
			port: ports[4*i], gport: ports[4*i+1], iport: ports[4*i+2], sport: ports[4*i+3]}
		c.nodes[i] = n
		for _, d := range []string{n.dir, n.data(), filepath.Join(n.dir, "run"), filepath.Join(n.dir, "tmp")} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, c.abort(err)
			}
			if err := c.own(d); err != nil {
				return nil, c.abort(err)
			}
		}
	}
	c.bufferPool = opts.BufferPool
	if c.bufferPool == 0 {
		c.bufferPool = 128 << 20
	}

	// Node 1 gets a system database and bootstraps the cluster; nodes 2
	// and 3 join with empty data directories and receive node 1's by SST.
	first := c.nodes[0]
	c.logf("galera: initialising node 1 in %s", first.data())
	if out, err := c.run(ctx, installBin, "--no-defaults", "--datadir="+first.data(), "--tmpdir="+filepath.Join(first.dir, "tmp"),
		"--auth-root-authentication-method=normal", "--skip-test-db"); err != nil {
		return nil, c.abort(fmt.Errorf("galera: mariadb-install-db: %w\n%s", err, tail(out)))
	}
	if err := first.start("--wsrep-new-cluster"); err != nil {
		return nil, c.abort(err)
	}
	if err := first.waitReady(ctx, ""); err != nil {
		return nil, c.abort(err)
	}
	// Ready for connections is not yet Synced: a write before that is
	// refused with 1047 (seen: ALTER USER failing at once).
	if err := c.waitSynced(ctx, 0); err != nil {
		return nil, c.abort(err)
	}
	pw := make([]byte, 16)
	_, _ = rand.Read(pw)
	password := hex.EncodeToString(pw)
	if err := first.exec(ctx, "", "ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '"+password+"'"); err != nil {
		return nil, c.abort(err)
	}
	c.password = password
	// A node restarted later must not bootstrap a second cluster: from now
	// on every node starts without --wsrep-new-cluster.
	for _, n := range c.nodes[1:] {
		c.logf("galera: node %d joining", n.i+1)
		if err := n.start(); err != nil {
			return nil, c.abort(err)
		}
		// One joiner at a time: two SSTs from one donor at once slow each
		// other down on a small machine.
		if err := c.waitSynced(ctx, n.i); err != nil {
			return nil, c.abort(err)
		}
	}
	if err := c.waitWhole(ctx); err != nil {
		return nil, c.abort(err)
	}
	// Seen: node 1 answering 1047 (not prepared) to a write right after
	// every node reported Synced in a primary component of three, while
	// the last joiner's arrival settled. A write through node 1 must work
	// before Start returns.
	if err := c.settle(ctx); err != nil {
		return nil, c.abort(err)
	}
	c.logf("galera: %d nodes synced; %s", Nodes, c.URL())
	return c, nil
}

func (c *Cluster) abort(err error) error {
	logs := c.Logs()
	_ = c.Close(context.Background())
	return fmt.Errorf("%w\n%s", err, logs)
}

// Logs is the end of every node's error log, for a failure's message.
func (c *Cluster) Logs() string {
	var logs strings.Builder
	for _, n := range c.nodes {
		if n != nil {
			fmt.Fprintf(&logs, "--- node %d error log:\n%s\n", n.i+1, n.logTail())
		}
	}
	return logs.String()
}

func (n *node) data() string { return filepath.Join(n.dir, "data") }

// Addr is the node's client address.
func (n *node) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// args are the node's server options. Timings are shortened for tests:
// a frozen member is suspected after 2 s and evicted after 3 s (defaults 5
// and 15 s).
func (n *node) args() []string {
	var peers []string
	for _, m := range n.c.nodes {
		peers = append(peers, "127.0.0.1:"+strconv.Itoa(m.gport))
	}
	provider := strings.Join([]string{
		"gmcast.listen_addr=tcp://127.0.0.1:" + strconv.Itoa(n.gport),
		"ist.recv_addr=127.0.0.1:" + strconv.Itoa(n.iport),
		"evs.keepalive_period=PT0.5S",
		"evs.suspect_timeout=PT2S",
		"evs.inactive_check_period=PT0.5S",
		"evs.inactive_timeout=PT3S",
		"evs.install_timeout=PT3S",
		"gcache.size=256M",
		"pc.recovery=false",
	}, ";")
	return []string{
		"--no-defaults",
		"--datadir=" + n.data(),
		"--tmpdir=" + filepath.Join(n.dir, "tmp"),
		"--socket=" + filepath.Join(n.dir, "run", "mariadb.sock"),
		"--port=" + strconv.Itoa(n.port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(n.dir, "run", "mariadb.pid"),
		"--log-error=" + filepath.Join(n.dir, "error.log"),
		"--skip-name-resolve",
		"--max-connections=300",
		"--innodb-buffer-pool-size=" + strconv.FormatInt(n.c.bufferPool, 10),
		"--innodb-log-file-size=48M",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_bin",
		"--default-time-zone=+00:00",
		"--innodb-lock-wait-timeout=10",
		"--transaction-isolation=READ-COMMITTED",
		// What holdfast requires of a Galera node (docs/OPERATIONS.md).
		"--innodb-flush-log-at-trx-commit=1",
		"--binlog-format=ROW",
		"--innodb-autoinc-lock-mode=2",
		"--wsrep-on=ON",
		"--wsrep-provider=" + Provider,
		"--wsrep-cluster-name=holdfast",
		"--wsrep-cluster-address=gcomm://" + strings.Join(peers, ","),
		"--wsrep-node-name=node" + strconv.Itoa(n.i+1),
		"--wsrep-node-address=127.0.0.1:" + strconv.Itoa(n.gport),
		"--wsrep-node-incoming-address=" + n.addr(),
		"--wsrep-sst-method=rsync",
		"--wsrep-sst-receive-address=127.0.0.1:" + strconv.Itoa(n.sport),
		"--wsrep-provider-options=" + provider,
		"--wsrep-slave-threads=2",
	}
}

func (n *node) start(extra ...string) error {
	args := append(n.args(), extra...)
	cmd := exec.Command(n.c.bin, args...)
	// Galera's state transfer scripts (wsrep_sst_rsync) are found on PATH.
	cmd.Env = append(os.Environ(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: n.c.runAs, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Dir = n.dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("galera: start node %d: %w", n.i+1, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	return nil
}

func (n *node) proc() (*exec.Cmd, chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd, n.done
}

// signal sends sig to the node's process group (mariadbd and any state
// transfer script it runs).
func (n *node) signal(sig syscall.Signal) error {
	cmd, _ := n.proc()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

// kill kills the node's processes and waits for mariadbd to exit.
func (n *node) kill(ctx context.Context) error {
	cmd, done := n.proc()
	if cmd == nil {
		return nil
	}
	_ = n.signal(syscall.SIGKILL)
	_ = n.signal(syscall.SIGCONT)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop shuts the node down cleanly (SIGTERM), killing it after a bound.
func (n *node) stop() {
	cmd, done := n.proc()
	if cmd == nil {
		return
	}
	_ = n.signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = n.signal(syscall.SIGKILL)
		<-done
	}
}

func (n *node) running() bool {
	_, done := n.proc()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

var recovered = regexp.MustCompile(`WSREP: Recovered position: ([0-9a-f-]{36}:-?[0-9]+)`)

// restart starts a killed node again from its recovered position, so that
// it rejoins by incremental state transfer (IST) instead of a full copy.
func (n *node) restart(ctx context.Context) error {
	log := filepath.Join(n.dir, "recover.log")
	_ = os.Remove(log)
	args := append(n.args(), "--wsrep-recover", "--log-error="+log)
	out, err := n.c.run(ctx, n.c.bin, args...)
	var extra []string
	b, _ := os.ReadFile(log)
	if m := recovered.FindSubmatch(b); err == nil && m != nil {
		extra = append(extra, "--wsrep-start-position="+string(m[1]))
	} else {
		n.c.logf("galera: node %d: no recovered position (%v) %s", n.i+1, err, tail(out))
	}
	return n.start(extra...)
}

// Engine is "mariadb".
func (c *Cluster) Engine() string { return "mariadb" }

// URL names every node in the fixed order holdfast's connector tries them
// (mysql://root:…@127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/), no database.
func (c *Cluster) URL() string { return c.URLFor("") }

// URLFor is URL with database selected.
func (c *Cluster) URLFor(database string) string {
	var hosts []string
	for _, n := range c.nodes {
		hosts = append(hosts, n.addr())
	}
	return fmt.Sprintf("mysql://root:%s@%s/%s", c.password, strings.Join(hosts, ","), database)
}

// NodeURL is the mysql:// URL of node i (0-based) alone.
func (c *Cluster) NodeURL(i int, database string) string {
	return fmt.Sprintf("mysql://root:%s@%s/%s", c.password, c.nodes[i].addr(), database)
}

// Config is the driver configuration of node i (0-based), as root.
func (c *Cluster) Config(i int, database string) *mysqldriver.Config {
	cfg := mysqldriver.NewConfig()
	cfg.User, cfg.Passwd = "root", c.password
	cfg.Net, cfg.Addr = "tcp", c.nodes[i].addr()
	cfg.DBName = database
	cfg.Timeout = time.Second
	cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 2*time.Second
	return cfg
}

// Kinds are all three.
func (c *Cluster) Kinds() []failovertest.Kind {
	return []failovertest.Kind{failovertest.Kill, failovertest.Freeze, failovertest.Switchover}
}

// Status is what a node says of itself.
type Status struct {
	Ready   bool   // wsrep_ready
	State   string // wsrep_local_state_comment: Synced, Donor/Desynced, Joining, …
	Cluster string // wsrep_cluster_status: Primary, non-Primary, Disconnected
	Size    int    // wsrep_cluster_size
	Reject  string // wsrep_reject_queries
}

// Writable reports what holdfast's connector requires of its writer.
func (s Status) Writable() bool {
	return s.Ready && s.State == "Synced" && s.Cluster == "Primary" && s.Reject == "NONE"
}

// statusTimeout bounds one node's status query: a frozen node never answers.
const statusTimeout = time.Second

// NodeStatus asks node i (0-based) for its wsrep status.
func (c *Cluster) NodeStatus(ctx context.Context, i int) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	conn, err := mysqldriver.NewConnector(c.Config(i, ""))
	if err != nil {
		return Status{}, err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var s Status
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready','wsrep_local_state_comment','wsrep_cluster_status','wsrep_cluster_size')")
	if err != nil {
		return s, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return s, err
		}
		switch strings.ToLower(k) {
		case "wsrep_ready":
			s.Ready = v == "ON"
		case "wsrep_local_state_comment":
			s.State = v
		case "wsrep_cluster_status":
			s.Cluster = v
		case "wsrep_cluster_size":
			s.Size, _ = strconv.Atoi(v)
		}
	}
	if err := rows.Err(); err != nil {
		return s, err
	}
	err = db.QueryRowContext(ctx, "SELECT @@global.wsrep_reject_queries").Scan(&s.Reject)
	return s, err
}

// Primary names the node holdfast writes to: the first, in URL's order,
// that is writable (host:port).
func (c *Cluster) Primary(ctx context.Context) (string, error) {
	i, err := c.writer(ctx)
	if err != nil {
		return "", err
	}
	return c.nodes[i].addr(), nil
}

func (c *Cluster) writer(ctx context.Context) (int, error) {
	var errs []error
	for i := range c.nodes {
		s, err := c.NodeStatus(ctx, i)
		if err == nil && s.Writable() {
			return i, nil
		}
		errs = append(errs, fmt.Errorf("node %d: %+v %v", i+1, s, err))
	}
	return -1, fmt.Errorf("galera: no writable node: %w", errors.Join(errs...))
}

// probeNodeTimeout bounds Probe's try of one node.
const probeNodeTimeout = time.Second

// Probe is the failover runner's baseline (failovertest.Prober): a plain
// client, no holdfast, given the same host list, inserting one row into
// the first node, in order, that takes it within probeNodeTimeout. Unlike
// holdfast it does not ask whether a node is Synced in the primary
// component: a node that takes the insert will do.
func (c *Cluster) Probe(ctx context.Context) error {
	c.probeOnce.Do(func() {
		for i := range c.nodes {
			cfg := c.Config(i, "holdfast_harness")
			cfg.ReadTimeout, cfg.WriteTimeout = 0, 0
			conn, err := mysqldriver.NewConnector(cfg)
			if err != nil {
				panic(err) // a configuration this package built
			}
			db := sql.OpenDB(conn)
			db.SetMaxOpenConns(4)
			c.probeDBs = append(c.probeDBs, db)
		}
	})
	var errs []error
	for i, db := range c.probeDBs {
		nctx, cancel := context.WithTimeout(ctx, probeNodeTimeout)
		_, err := db.ExecContext(nctx, "INSERT INTO probe (at) VALUES (NOW(6))")
		cancel()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("node %d: %w", i+1, err))
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// Inject loses the current writer in the way k says.
func (c *Cluster) Inject(ctx context.Context, k failovertest.Kind) (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending != nil {
		return time.Time{}, fmt.Errorf("galera: %s of node %d not healed yet", c.pending.kind, c.pending.node+1)
	}
	i, err := c.writer(ctx)
	if err != nil {
		return time.Time{}, err
	}
	n := c.nodes[i]
	var at time.Time
	switch k {
	case failovertest.Kill:
		at = time.Now()
		if err := n.signal(syscall.SIGKILL); err != nil {
			return at, err
		}
	case failovertest.Freeze:
		at = time.Now()
		if err := n.signal(syscall.SIGSTOP); err != nil {
			return at, err
		}
	case failovertest.Switchover:
		// Desynced, the node is no longer Synced, which every holdfast
		// connector sees at its next probe; ALL_KILL then ends the
		// connections still on it (in-flight transactions roll back, a
		// COMMIT in flight is an unknown outcome to its client).
		if err := n.exec(ctx, c.password, "SET GLOBAL wsrep_desync = ON"); err != nil {
			return time.Now(), err
		}
		if err := n.exec(ctx, c.password, "SET GLOBAL wsrep_reject_queries = ALL_KILL"); err != nil {
			return time.Now(), err
		}
		// In effect once the node refuses queries: until then it wrote.
		at = time.Now()
	default:
		return time.Time{}, fmt.Errorf("galera: unknown fault %q", k)
	}
	c.pending = &fault{kind: k, node: i}
	c.logf("galera: %s of node %d", k, i+1)
	return at, nil
}

// Heal undoes the pending fault and waits for the cluster to be whole.
func (c *Cluster) Heal(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.pending; f != nil {
		n := c.nodes[f.node]
		switch f.kind {
		case failovertest.Kill:
			if err := n.kill(ctx); err != nil {
				return err
			}
			if err := n.restart(ctx); err != nil {
				return err
			}
		case failovertest.Freeze:
			if err := n.signal(syscall.SIGCONT); err != nil {
				return err
			}
		case failovertest.Switchover:
			if err := c.healSwitchover(ctx, n); err != nil {
				return err
			}
		}
		c.pending = nil
	}
	if err := c.waitWhole(ctx); err != nil {
		return err
	}
	c.logf("galera: whole again")
	return nil
}

func (c *Cluster) healSwitchover(ctx context.Context, n *node) error {
	// wsrep_reject_queries refuses queries with ER_UNKNOWN_COM_ERROR but
	// lets SET statements through.
	if err := n.exec(ctx, c.password, "SET GLOBAL wsrep_reject_queries = NONE"); err != nil {
		return err
	}
	return n.exec(ctx, c.password, "SET GLOBAL wsrep_desync = OFF")
}

// settle waits until node 1 takes a write (a replicated DDL statement).
func (c *Cluster) settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	for {
		err := c.nodes[0].exec(ctx, c.password, "CREATE DATABASE IF NOT EXISTS holdfast_harness")
		if err == nil {
			err = c.nodes[0].exec(ctx, c.password, "CREATE TABLE IF NOT EXISTS holdfast_harness.probe (id BIGINT AUTO_INCREMENT PRIMARY KEY, at DATETIME(6) NOT NULL)")
		}
		if err == nil {
			return c.waitWhole(ctx)
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("galera: node 1 takes no write: %w", err)
		}
	}
}

// waitWhole waits until every node is Synced in one primary component of
// all three.
func (c *Cluster) waitWhole(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	var last error
	for {
		ok := true
		for i := range c.nodes {
			s, err := c.NodeStatus(ctx, i)
			if err != nil || !s.Writable() || s.Size != Nodes {
				ok = false
				last = fmt.Errorf("node %d: %+v %v", i+1, s, err)
				break
			}
		}
		if ok {
			return nil
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("galera: cluster not whole after %v: %w (last: %v)", SyncTimeout, err, last)
		}
	}
}

func (c *Cluster) waitSynced(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	var last error
	_, done := c.nodes[i].proc()
	for {
		s, err := c.NodeStatus(ctx, i)
		if err == nil && s.Writable() {
			return nil
		}
		last = fmt.Errorf("%+v %v", s, err)
		select {
		case <-done:
			return fmt.Errorf("galera: node %d exited", i+1)
		default:
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("galera: node %d not synced: %w (last: %v)", i+1, err, last)
		}
	}
}

// pollInterval is the interval between status polls.
const pollInterval = 100 * time.Millisecond

func pause(ctx context.Context) error {
	t := time.NewTimer(pollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Close stops every node and removes the cluster's files.
func (c *Cluster) Close(ctx context.Context) error {
	for _, db := range c.probeDBs {
		db.Close()
	}
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if n != nil {
			wg.Add(1)
			go func() { defer wg.Done(); n.stop() }()
		}
	}
	wg.Wait()
	if c.dir != "" {
		return os.RemoveAll(c.dir)
	}
	return nil
}

// NodeAddr is node i's (0-based) client address, host:port.
func (c *Cluster) NodeAddr(i int) string { return c.nodes[i].addr() }

func (n *node) waitReady(ctx context.Context, password string) error {
	ctx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	_, done := n.proc()
	var last error
	for {
		err := n.exec(ctx, password, "SELECT 1")
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-done:
			return fmt.Errorf("galera: node %d exited", n.i+1)
		default:
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("galera: node %d not ready: %w (last: %v)", n.i+1, err, last)
		}
	}
}

func (n *node) exec(ctx context.Context, password, stmt string) error {
	cfg := mysqldriver.NewConfig()
	cfg.User, cfg.Passwd = "root", password
	cfg.Net, cfg.Addr = "tcp", n.addr()
	cfg.Timeout = time.Second
	conn, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

func (n *node) logTail() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
	return tail(b)
}

func tail(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

func (c *Cluster) run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.runAs}
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

func (c *Cluster) own(dir string) error {
	if c.runAs == nil {
		return nil
	}
	return os.Chown(dir, int(c.runAs.Uid), int(c.runAs.Gid))
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
	return nil, errors.New("galera: running as root, and no unprivileged \"mysql\" or \"nobody\" user to run MariaDB as")
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
