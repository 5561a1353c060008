// Package patroni starts a private highly available PostgreSQL cluster for
// tests and the failover demo: one etcd and three PostgreSQL 15 nodes
// managed by Debian's Patroni 3.0.2, on 127.0.0.1 only, with strict
// synchronous replication (synchronous_mode and synchronous_mode_strict),
// test timings (ttl 10 s, loop_wait 1 s, retry_timeout 3 s) and
// wal_retrieve_retry_interval 1 s.
//
// It uses Patroni's etcd (v2 API) DCS, never etcd3: in 3.0.2 a leader whose
// PostgreSQL was frozen and thawed overwrites the new leader's key through
// etcd3 and every write the new leader acknowledged is lost (fixed in
// 3.0.3; ../shared/reference/scale-ha/patroni-recipe.md).
//
// PostgreSQL refuses root: when the calling process is root, every file is
// owned by, and every process runs as, the unprivileged "postgres" user, as
// in package pgcluster. A Cluster implements failovertest.Cluster.
//
// fsync is off (a test cluster; the machine does not crash, only processes
// die), full_page_writes stays on: pg_rewind, which brings a failed primary
// back as a standby, refuses a source without it.
package patroni

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/failovertest"
	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// ErrNoPatroni is returned by Start when patroni or etcd is not installed.
var ErrNoPatroni = errors.New("patroni: the patroni and etcd binaries are not installed (run scripts/setup, or `apt-get install patroni etcd-server etcd-client` on Debian)")

// Nodes is how many PostgreSQL nodes a cluster has.
const Nodes = 3

// Test timings (the DCS's bootstrap section): a failover takes about ttl
// plus loop_wait after the leader stops renewing its key.
const (
	TTL          = 10 * time.Second
	LoopWait     = 1 * time.Second
	RetryTimeout = 3 * time.Second
)

// StartTimeoutMax bounds Start and Heal: a cold start takes about 14 s on
// two idle cores, several times that on a loaded machine.
const StartTimeoutMax = 3 * time.Minute

// Database is the database the cluster creates for holdfast, owned by User.
const (
	Database = "holdfast"
	User     = "holdfast"
)

// Options configures a cluster. The zero value is what tests want.
type Options struct {
	// Log receives one line per lifecycle step and fault. Nil is silent.
	Log func(format string, args ...any)
}

// Cluster is a running private Patroni cluster. It is safe for concurrent
// use; Close is idempotent.
type Cluster struct {
	dir      string
	logf     func(string, ...any)
	runAs    *syscall.Credential
	bin      string
	password string // of User
	superPW  string
	etcdPort int
	etcd     *proc
	http     *http.Client

	mu     sync.Mutex
	nodes  [Nodes]*node
	frozen []int // pids stopped by Inject(Freeze)

	keep atomic.Bool // a heal failed: Close keeps the logs

	probeMu sync.Mutex
	probe   *pgx.Conn // Probe's connection
	closeMu sync.Once
}

type node struct {
	name    string
	pgPort  int
	apiPort int
	dir     string
	patroni *proc
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

var _ failovertest.Cluster = (*Cluster)(nil)

// Start starts etcd and three Patroni nodes and returns once there is a
// leader, a synchronous standby and a replica, and database Database
// exists, owned by User.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if _, err := exec.LookPath("patroni"); err != nil {
		return nil, ErrNoPatroni
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		return nil, ErrNoPatroni
	}
	bin, err := pgcluster.FindBinDir()
	if err != nil {
		return nil, err
	}
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeoutMax)
	defer cancel()
	dir, err := os.MkdirTemp("", "holdfast-patroni-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, logf: logf, bin: bin, password: secret(), superPW: secret(),
		http: &http.Client{Timeout: 5 * time.Second}}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("patroni: running as root, and PostgreSQL refuses root; no unprivileged \"postgres\" user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.runAs = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if err := c.start(ctx); err != nil {
		c.Close(context.Background()) //nolint:errcheck
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	ports, err := freePorts(2 + 2*Nodes)
	if err != nil {
		return err
	}
	c.etcdPort = ports[0]
	if err := c.mkdir(c.dir); err != nil {
		return err
	}
	etcdDir := filepath.Join(c.dir, "etcd")
	if err := c.mkdir(etcdDir); err != nil {
		return err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	c.etcd, err = c.spawn(filepath.Join(etcdDir, "etcd.log"), "etcd", "--name", "e1",
		"--data-dir", filepath.Join(etcdDir, "data"), "--enable-v2=true",
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e1="+peer, "--initial-cluster-state", "new")
	if err != nil {
		return err
	}
	if err := c.poll(ctx, "etcd", func() bool {
		res, err := c.http.Get(client + "/v2/keys/")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}); err != nil {
		return err
	}
	c.logf("etcd listening on %s (v2 API)", client)
	for i := range c.nodes {
		n := &node{name: "n" + strconv.Itoa(i+1), pgPort: ports[2+2*i], apiPort: ports[3+2*i], dir: filepath.Join(c.dir, "n"+strconv.Itoa(i+1))}
		if err := c.mkdir(n.dir); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(n.dir, "patroni.yml"), []byte(c.config(n)), 0o600); err != nil {
			return err
		}
		if err := c.chown(filepath.Join(n.dir, "patroni.yml")); err != nil {
			return err
		}
		c.nodes[i] = n
	}
	// The first node bootstraps alone, then the others clone it: three
	// racing initdbs cost a loaded machine more than they save.
	for i, n := range c.nodes {
		if err := c.startPatroni(n); err != nil {
			return err
		}
		if i == 0 {
			if err := c.poll(ctx, "the first leader", func() bool {
				st, err := c.clusterState(ctx)
				return err == nil && st.leader() != nil && st.leader().State == "running"
			}); err != nil {
				return err
			}
		}
	}
	if err := c.waitWhole(ctx); err != nil {
		return err
	}
	if err := c.createDatabase(ctx); err != nil {
		return err
	}
	if err := c.waitLogins(ctx); err != nil {
		return err
	}
	c.logf("patroni cluster ready in %s", c.dir)
	return nil
}

// config is node n's patroni.yml (see the recipe).
func (c *Cluster) config(n *node) string {
	return fmt.Sprintf(`scope: holdfast
namespace: /holdfast-test/
name: %[1]s
restapi: {listen: "127.0.0.1:%[2]d", connect_address: "127.0.0.1:%[2]d"}
etcd: {hosts: "127.0.0.1:%[3]d"}
bootstrap:
  dcs:
    ttl: %[4]d
    loop_wait: %[5]d
    retry_timeout: %[6]d
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters: {wal_level: replica, hot_standby: "on", wal_log_hints: "on", max_wal_senders: 10,
                   max_replication_slots: 10, wal_keep_size: 128MB, wal_retrieve_retry_interval: 1s}
  initdb: [{encoding: UTF8}, {locale: C}, {auth-local: trust}, {auth-host: scram-sha-256}]
  pg_hba: ["local all all trust", "host replication replicator 127.0.0.1/32 scram-sha-256",
           "host all all 127.0.0.1/32 scram-sha-256"]
postgresql:
  listen: "127.0.0.1:%[7]d"
  connect_address: "127.0.0.1:%[7]d"
  data_dir: %[8]s
  bin_dir: %[9]s
  pgpass: %[10]s
  authentication:
    superuser: {username: postgres, password: %[11]s}
    replication: {username: replicator, password: %[11]s}
    rewind: {username: rewinder, password: %[11]s}
  parameters: {unix_socket_directories: "%[12]s", shared_buffers: 32MB, max_connections: 100,
               fsync: "off", max_locks_per_transaction: 256, jit: "off"}
`, n.name, n.apiPort, c.etcdPort, int(TTL/time.Second), int(LoopWait/time.Second), int(RetryTimeout/time.Second),
		n.pgPort, filepath.Join(n.dir, "data"), c.bin, filepath.Join(n.dir, "pgpass"), c.superPW, n.dir)
}

// startPatroni starts node n's Patroni in its own session with a clean
// environment (an inherited PGPASSWORD would override the pgpass file of
// pg_basebackup, and replicas would never be created).
func (c *Cluster) startPatroni(n *node) error {
	p, err := c.spawn(filepath.Join(n.dir, "patroni.log"), "patroni", filepath.Join(n.dir, "patroni.yml"))
	if err != nil {
		return err
	}
	c.mu.Lock()
	n.patroni = p
	c.mu.Unlock()
	return nil
}

func (c *Cluster) spawn(logPath, name string, args ...string) (*proc, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, err
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=" + c.dir}
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: c.runAs, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("patroni: start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); lf.Close(); close(p.done) }()
	return p, nil
}

// Member is one node as Patroni's GET /cluster shows it.
type Member struct {
	Name     string `json:"name"`
	Role     string `json:"role"` // leader, sync_standby, replica
	State    string `json:"state"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Timeline int    `json:"timeline"`
	Lag      any    `json:"lag"` // bytes, or "unknown"
}

// State is the cluster as Patroni's GET /cluster shows it.
type State struct {
	Members []Member `json:"members"`
}

func (s State) leader() *Member {
	for i := range s.Members {
		if s.Members[i].Role == "leader" {
			return &s.Members[i]
		}
	}
	return nil
}

// whole reports a leader, a synchronous standby and every other node a
// running replica with no lag.
func (s State) whole() bool {
	if len(s.Members) != Nodes {
		return false
	}
	roles := map[string]int{}
	for _, m := range s.Members {
		if m.State != "running" {
			return false
		}
		if m.Role != "leader" {
			if lag, ok := m.Lag.(float64); !ok || lag > 0 {
				return false
			}
		}
		roles[m.Role]++
	}
	return roles["leader"] == 1 && roles["sync_standby"] >= 1
}

// ClusterState asks any node's REST API for GET /cluster.
func (c *Cluster) ClusterState(ctx context.Context) (State, error) { return c.clusterState(ctx) }

func (c *Cluster) clusterState(ctx context.Context) (State, error) {
	var last error
	for _, n := range c.nodes {
		if n == nil {
			continue
		}
		var st State
		if err := c.getJSON(ctx, n, "/cluster", &st); err != nil {
			last = err
			continue
		}
		return st, nil
	}
	if last == nil {
		last = errors.New("no node")
	}
	return State{}, last
}

func (c *Cluster) getJSON(ctx context.Context, n *node, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // Patroni answers slowly on a loaded machine
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", n.apiPort, path), nil)
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s on %s: %s", path, n.name, res.Status)
	}
	return json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(v)
}

// waitWhole polls until the cluster is whole (State.whole).
func (c *Cluster) waitWhole(ctx context.Context) error {
	var last State
	var lastErr error
	err := c.poll(ctx, "three nodes with a synchronous standby", func() bool {
		st, err := c.clusterState(ctx)
		if err != nil {
			lastErr = err
			return false
		}
		last = st
		return st.whole()
	})
	if err != nil {
		c.keep.Store(true)
		return fmt.Errorf("%w (last seen %+v, last error %v; logs kept in %s)", err, last.Members, lastErr, c.dir)
	}
	return nil
}

func (c *Cluster) poll(ctx context.Context, what string, cond func() bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("patroni: waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// createDatabase creates User and Database on the leader.
func (c *Cluster) createDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.SuperURL("postgres"))
	if err != nil {
		return fmt.Errorf("patroni: connect to the leader: %w", err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", User, c.password),
		fmt.Sprintf("CREATE DATABASE %s OWNER %s", Database, User),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("patroni: %s: %w", strings.Fields(q)[0]+" "+strings.Fields(q)[1], err)
		}
	}
	return nil
}

// waitLogins polls until every node takes User's login to Database. The
// role and the database are created on the leader, and a COMMIT there
// waits for the synchronous standby to flush them, not to replay them;
// the other standby is asynchronous. Until a standby has replayed them it
// refuses the login (28P01 "password authentication failed", then 3D000),
// and pgx, like libpq, stops at a host that refuses the login without
// trying the hosts after it: a URL that lists such a standby before the
// leader fails (docs/FAULTS.md).
func (c *Cluster) waitLogins(ctx context.Context) error {
	start := time.Now()
	for _, n := range c.nodes {
		u := fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", User, url.QueryEscape(c.password), n.pgPort, Database)
		var last error
		refusals := 0
		err := c.poll(ctx, n.name+" to take "+User+"'s login", func() bool {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			conn, err := pgx.Connect(cctx, u)
			if err != nil {
				last = err
				refusals++
				return false
			}
			conn.Close(context.Background())
			return true
		})
		if err != nil {
			c.keep.Store(true)
			return fmt.Errorf("%w (last error %v; logs kept in %s)", err, last, c.dir)
		}
		if refusals > 0 {
			c.logf("%s took %s's login after %s (%d refused: %v)", n.name, User, time.Since(start).Round(time.Millisecond), refusals, last)
		}
	}
	return nil
}

func (c *Cluster) hosts() string {
	var hs []string
	for _, n := range c.nodes {
		hs = append(hs, "127.0.0.1:"+strconv.Itoa(n.pgPort))
	}
	return strings.Join(hs, ",")
}

// URL is holdfast's connection string: every node, the writable one chosen
// at connect (target_session_attrs=read-write), 2 s to connect to each.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		User, url.QueryEscape(c.password), c.hosts(), Database)
}

// SuperURL is the superuser's multi-host connection string to db.
func (c *Cluster) SuperURL(db string) string {
	return fmt.Sprintf("postgres://postgres:%s@%s/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		url.QueryEscape(c.superPW), c.hosts(), db)
}

// NodeURL is the superuser's connection string to one node's db.
func (c *Cluster) NodeURL(name, db string) string {
	n := c.node(name)
	if n == nil {
		return ""
	}
	return fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", url.QueryEscape(c.superPW), n.pgPort, db)
}

// Engine is "postgres".
func (c *Cluster) Engine() string { return "postgres" }

// Kinds: kill -9 of the primary's postmaster, SIGSTOP of every PostgreSQL
// process of the primary, and Patroni's switchover.
func (c *Cluster) Kinds() []failovertest.Kind {
	return []failovertest.Kind{failovertest.Kill, failovertest.Freeze, failovertest.Switchover}
}

// Primary names the leader, as GET /cluster shows it.
func (c *Cluster) Primary(ctx context.Context) (string, error) {
	st, err := c.clusterState(ctx)
	if err != nil {
		return "", err
	}
	if l := st.leader(); l != nil && l.State == "running" {
		return l.Name, nil
	}
	return "", errors.New("patroni: no running leader")
}

func (c *Cluster) node(name string) *node {
	for _, n := range c.nodes {
		if n != nil && n.name == name {
			return n
		}
	}
	return nil
}

// postmaster is the pid on the first line of node n's postmaster.pid.
func (n *node) postmaster() (int, error) {
	b, err := os.ReadFile(filepath.Join(n.dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// Inject loses the primary: Kill sends SIGKILL to its postmaster (Patroni
// on the same node restarts PostgreSQL as a standby), Freeze sends SIGSTOP
// to the postmaster and every child (Patroni's loop then blocks on it and
// the synchronous standby is promoted after about TTL), Switchover asks
// Patroni's REST API to hand over to the synchronous standby and returns
// once Patroni answers.
func (c *Cluster) Inject(ctx context.Context, k failovertest.Kind) (time.Time, error) {
	name, err := c.Primary(ctx)
	if err != nil {
		return time.Time{}, err
	}
	n := c.node(name)
	switch k {
	case failovertest.Kill:
		pid, err := n.postmaster()
		if err != nil {
			return time.Time{}, err
		}
		at := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return time.Time{}, fmt.Errorf("patroni: kill %s's postmaster %d: %w", name, pid, err)
		}
		c.logf("killed %s's postmaster (pid %d)", name, pid)
		return at, nil
	case failovertest.Freeze:
		pid, err := n.postmaster()
		if err != nil {
			return time.Time{}, err
		}
		pids := append([]int{pid}, children(pid)...)
		at := time.Now()
		c.mu.Lock()
		for _, p := range pids {
			if syscall.Kill(p, syscall.SIGSTOP) == nil {
				c.frozen = append(c.frozen, p)
			}
		}
		c.mu.Unlock()
		c.logf("froze %s's PostgreSQL (%d processes)", name, len(pids))
		return at, nil
	case failovertest.Switchover:
		st, err := c.clusterState(ctx)
		if err != nil {
			return time.Time{}, err
		}
		candidate := ""
		for _, m := range st.Members {
			if m.Role == "sync_standby" {
				candidate = m.Name
			}
		}
		if candidate == "" {
			return time.Time{}, errors.New("patroni: switchover: no synchronous standby")
		}
		body, _ := json.Marshal(map[string]string{"leader": name, "candidate": candidate})
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(rctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/switchover", n.apiPort), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		at := time.Now()
		hc := &http.Client{Timeout: 60 * time.Second}
		res, err := hc.Do(req)
		if err != nil {
			return at, fmt.Errorf("patroni: switchover: %w", err)
		}
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return at, fmt.Errorf("patroni: switchover %s -> %s: %s %s", name, candidate, res.Status, msg)
		}
		c.logf("switched over %s -> %s: %s", name, candidate, strings.TrimSpace(string(msg)))
		return at, nil
	}
	return time.Time{}, fmt.Errorf("patroni: fault %q not supported", k)
}

// children lists the pids whose parent is pid (from /proc).
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; cut at the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			if pp, _ := strconv.Atoi(f[1]); pp == pid {
				out = append(out, p)
			}
		}
	}
	return out
}

// Heal thaws frozen processes, restarts any Patroni that exited, and
// returns once the cluster is whole: a leader, a synchronous standby, the
// third node a replica, all running with no lag.
func (c *Cluster) Heal(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeoutMax)
	defer cancel()
	c.mu.Lock()
	frozen := c.frozen
	c.frozen = nil
	c.mu.Unlock()
	for _, p := range frozen {
		_ = syscall.Kill(p, syscall.SIGCONT)
	}
	if len(frozen) > 0 {
		c.logf("thawed %d processes", len(frozen))
	}
	for _, n := range c.nodes {
		if !n.patroni.alive() {
			c.logf("restarting %s's Patroni", n.name)
			if err := c.startPatroni(n); err != nil {
				return err
			}
		}
	}
	return c.waitWhole(ctx)
}

// KillPatroni kills node name's Patroni daemon (not its PostgreSQL); Heal
// restarts it.
func (c *Cluster) KillPatroni(name string) error {
	n := c.node(name)
	if n == nil {
		return fmt.Errorf("patroni: no node %q", name)
	}
	_ = n.patroni.cmd.Process.Kill()
	<-n.patroni.done
	return nil
}

// StopNode stops node name's Patroni with SIGTERM (Patroni stops its
// PostgreSQL first) and returns once it exited; Heal starts it again.
func (c *Cluster) StopNode(ctx context.Context, name string) error {
	n := c.node(name)
	if n == nil {
		return fmt.Errorf("patroni: no node %q", name)
	}
	_ = n.patroni.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.patroni.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dir is the cluster's directory (logs: etcd/etcd.log, nN/patroni.log).
func (c *Cluster) Dir() string { return c.dir }

// Close kills every process of the cluster (its PostgreSQL servers too)
// and removes its files (kept, for reading the logs, when
// HOLDFAST_PATRONI_KEEP is set or a Heal failed).
func (c *Cluster) Close(ctx context.Context) error {
	c.closeMu.Do(func() {
		c.mu.Lock()
		for _, p := range c.frozen {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
		c.frozen = nil
		c.mu.Unlock()
		c.probeMu.Lock()
		if c.probe != nil {
			_ = c.probe.Close(ctx)
			c.probe = nil
		}
		c.probeMu.Unlock()
		for _, n := range c.nodes {
			if n == nil {
				continue
			}
			pm, _ := n.postmaster()
			if n.patroni != nil {
				_ = n.patroni.cmd.Process.Kill()
				<-n.patroni.done
			}
			// Patroni's PostgreSQL runs in Patroni's session but is not
			// killed with it: kill the postmaster and its children.
			if pm > 0 && ownedBy(pm, filepath.Join(n.dir, "data")) {
				for _, ch := range children(pm) {
					_ = syscall.Kill(ch, syscall.SIGKILL)
				}
				_ = syscall.Kill(pm, syscall.SIGKILL)
			}
		}
		if c.etcd != nil {
			_ = c.etcd.cmd.Process.Kill()
			<-c.etcd.done
		}
		if os.Getenv("HOLDFAST_PATRONI_KEEP") == "" && !c.keep.Load() {
			_ = os.RemoveAll(c.dir)
		}
	})
	return nil
}

// ownedBy reports whether pid is a postgres whose command line names
// dataDir: a pid from a stale postmaster.pid may have been reused.
func ownedBy(pid int, dataDir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte(dataDir))
}

func (c *Cluster) mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return c.chown(dir)
}

func (c *Cluster) chown(p string) error {
	if c.runAs == nil {
		return nil
	}
	return os.Chown(p, int(c.runAs.Uid), int(c.runAs.Gid))
}

func secret() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

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

// Probe writes one row through a plain pgx connection on URL (no holdfast):
// the baseline the failover runner compares holdfast's unavailability with
// (failovertest.Prober). On any error the connection is dropped and the
// next call connects again through the multi-host URL.
func (c *Cluster) Probe(ctx context.Context) error {
	c.probeMu.Lock()
	defer c.probeMu.Unlock()
	if c.probe == nil || c.probe.IsClosed() {
		conn, err := pgx.Connect(ctx, c.URL())
		if err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS failover_probe (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())"); err != nil {
			conn.Close(context.Background())
			return err
		}
		c.probe = conn
	}
	if _, err := c.probe.Exec(ctx, "INSERT INTO failover_probe DEFAULT VALUES"); err != nil {
		c.probe.Close(context.Background())
		c.probe = nil
		return err
	}
	return nil
}

var _ failovertest.Prober = (*Cluster)(nil)
