package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/holdfast/holdfast"
)

// Several hosts: a Galera cluster (or a primary with replicas) written
// through exactly one node.
//
// A URL or DSN whose address names several hosts, in a fixed order
// (mysql://user:pw@db1:3306,db2:3306,db3:3306/holdfast), gets a connector
// that opens connections only to the writer: the first host, in that order,
// that is writable. On a Galera node writable means wsrep_ready ON,
// wsrep_local_state_comment Synced, wsrep_cluster_status Primary and
// wsrep_reject_queries NONE; on any server, read_only OFF. Every holdfast
// process given the same URL therefore picks the same node, and moves with
// the others: Galera's row locks are local to a node, so two writer nodes
// would not exclude each other (docs/OPERATIONS.md, "MariaDB: high
// availability").
//
// The connector probes every host each ProbeInterval (and at once when a
// connection cannot be opened). When the writer changes it first waits on
// the new writer for every write set the cluster has ordered to be applied
// there (wsrep_sync_wait), so that reads there see what the old writer
// acknowledged, and closes every connection still open to any other host —
// idle ones are then dropped by the pool, in-flight transactions fail as a
// lost connection (retried; a COMMIT in flight is outcome_unknown) — so that
// one process never writes through two nodes at once for longer than one
// probe.

// Bounds of the multi-host connector.
const (
	// ProbeInterval is how often every host is asked whether it is
	// writable.
	ProbeInterval = 500 * time.Millisecond
	// ProbeTimeout bounds one host's answer (connecting included): a
	// frozen host never answers.
	ProbeTimeout = time.Second
	// probeMinInterval spaces probes asked for by failing connects, so a
	// burst of them probes once.
	probeMinInterval = 100 * time.Millisecond
	// barrierTimeout bounds the wait for a new writer to apply what the
	// cluster has ordered; the next probe tries again. Short: a causal
	// read asked while the cluster still waits to evict a frozen node
	// was seen stalling past the eviction.
	barrierTimeout = 2 * time.Second
	// ConnectTimeout bounds opening one connection to the writer.
	ConnectTimeout = 10 * time.Second
	// suspectMax is how many probes in a row the writer may leave
	// unanswered before the connector moves off it.
	suspectMax = 2
	// HostsMax bounds the hosts one URL may name.
	HostsMax = 9
)

// ErrNoWriter is the error of a connection asked for while no host of a
// multi-host URL is writable. It is classified as a lost connection:
// retried with backoff, then holdfast.ErrUnavailable.
var ErrNoWriter = errors.New("holdfast/mysql: no host of the URL is writable (Synced in the primary component, not read-only)")

// NewConnector is the driver connector for cfg: go-sql-driver's own for one
// host; for an address naming several hosts (comma-separated), one that
// connects only to the writer (see ProbeInterval). The pool built on it
// (sql.OpenDB) stops the connector's prober when closed.
func NewConnector(cfg *mysqldriver.Config) (driver.Connector, error) {
	if !strings.Contains(cfg.Addr, ",") {
		return mysqldriver.NewConnector(cfg)
	}
	hosts, err := splitHosts(cfg.Addr)
	if err != nil {
		return nil, err
	}
	w := &writerConnector{hosts: hosts, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	w.writer.Store(-1)
	w.open = make([]map[*trackedConn]struct{}, len(hosts))
	for i, h := range hosts {
		w.open[i] = map[*trackedConn]struct{}{}
		hc := cfg.Clone()
		hc.Addr = h
		hc.DialFunc = w.dialer(i)
		c, err := mysqldriver.NewConnector(hc)
		if err != nil {
			return nil, err
		}
		w.conns = append(w.conns, c)
		pc := cfg.Clone()
		pc.Addr = h
		pc.DBName = ""
		pc.Timeout = ProbeTimeout
		pc.Params = nil
		pconn, err := mysqldriver.NewConnector(pc)
		if err != nil {
			return nil, err
		}
		db := sql.OpenDB(pconn)
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		w.probes = append(w.probes, db)
	}
	return w, nil
}

// splitHosts splits a comma-separated address list; a host without a port
// gets 3306.
func splitHosts(addr string) ([]string, error) {
	var hosts []string
	for _, h := range strings.Split(addr, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, &holdfast.ArgumentError{Field: "DATABASE_URL", Reason: fmt.Sprintf("empty host in the host list %q", addr)}
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, "3306")
		}
		hosts = append(hosts, h)
	}
	if len(hosts) > HostsMax {
		return nil, &holdfast.ArgumentError{Field: "DATABASE_URL", Reason: fmt.Sprintf("names %d hosts; at most %d", len(hosts), HostsMax)}
	}
	return hosts, nil
}

type writerConnector struct {
	hosts  []string
	conns  []driver.Connector // per host, connections tracked by dialer
	probes []*sql.DB          // per host, one connection each

	writer   atomic.Int32 // index into hosts; -1: none known
	probeMu  sync.Mutex
	probedAt time.Time
	suspect  int // consecutive unanswered probes of the writer

	mu   sync.Mutex
	open []map[*trackedConn]struct{} // per host

	startOnce sync.Once
	started   atomic.Bool
	closeOnce sync.Once
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
}

var _ driver.Connector = (*writerConnector)(nil)

func (w *writerConnector) Driver() driver.Driver { return w.conns[0].Driver() }

// Connect opens a connection to the writer, probing first when none is
// known.
func (w *writerConnector) Connect(ctx context.Context) (driver.Conn, error) {
	w.startOnce.Do(func() { w.started.Store(true); go w.loop() })
	i := w.writer.Load()
	if i < 0 {
		// Probe here unless a probe is under way (a move waits for the
		// new writer's barrier): then answer at once, so that callers
		// (and /readyz) hear "no writer" instead of waiting on it.
		if w.probeMu.TryLock() {
			w.probeLocked(ctx, true)
			w.probeMu.Unlock()
		}
		if i = w.writer.Load(); i < 0 {
			return nil, ErrNoWriter
		}
	}
	// database/sql also opens connections in the background, with no
	// deadline: a writer that froze mid-handshake must not hold a pool
	// slot for ever (fencing closes it too, once the writer moves).
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	conn, err := w.conns[i].Connect(ctx)
	if err != nil {
		w.poke()
		return nil, err
	}
	return &nodeConn{Conn: conn, w: w}, nil
}

// Close stops the prober and closes the probes' connections. database/sql
// calls it when the pool is closed.
func (w *writerConnector) Close() error {
	w.closeOnce.Do(func() {
		close(w.stop)
		w.startOnce.Do(func() {}) // no prober starts after Close
		if w.started.Load() {
			<-w.done
		}
		for _, db := range w.probes {
			db.Close()
		}
	})
	return nil
}

// Writer is the host a multi-host connector currently writes to, "" when
// none is writable or the connector has one host. For tests and doctor.
func Writer(c driver.Connector) string {
	w, ok := c.(*writerConnector)
	if !ok {
		return ""
	}
	if i := w.writer.Load(); i >= 0 {
		return w.hosts[i]
	}
	return ""
}

func (w *writerConnector) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *writerConnector) loop() {
	defer close(w.done)
	t := time.NewTicker(ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.probe(context.Background(), false)
		case <-w.kick:
			w.probe(context.Background(), true)
		}
	}
}

// hostState is one host's answer to the probe.
type hostState int

const (
	hostWritable hostState = iota
	hostRefused            // it answered: not writable, or refused the connection
	hostSilent             // no answer within ProbeTimeout
)

// probe asks every host, in order, whether it is writable, and moves the
// writer when the answer changed. urgent probes run at most every
// probeMinInterval; concurrent callers share one probe.
func (w *writerConnector) probe(ctx context.Context, urgent bool) {
	w.probeMu.Lock()
	defer w.probeMu.Unlock()
	w.probeLocked(ctx, urgent)
}

// probeLocked is probe with probeMu held.
func (w *writerConnector) probeLocked(ctx context.Context, urgent bool) {
	if urgent && time.Since(w.probedAt) < probeMinInterval {
		return
	}
	select {
	case <-w.stop:
		return
	default:
	}
	cur := int(w.writer.Load())
	next := -1
	for i := range w.hosts {
		st := w.ask(ctx, i)
		if i == cur {
			if st != hostSilent {
				w.suspect = 0
			} else if w.suspect++; w.suspect < suspectMax {
				// A writer that does not answer once may be slow (a
				// loaded machine); suspectMax times in a row, it is gone
				// (frozen, partitioned).
				next = cur
				break
			}
		}
		if st == hostWritable {
			next = i
			break
		}
	}
	w.probedAt = time.Now()
	if next == cur {
		return
	}
	w.suspect = 0
	// No writer while moving, and every connection closed first: then
	// nothing this process sends commits on the old writer after the
	// barrier below has passed (seen without this order: a hold committed
	// on the old writer between the barrier and the fence, and the claim
	// that followed, on the new writer, answered "not found"). A
	// connection dialled meanwhile sees no writer in its dialer and closes
	// itself; Connect waits for this probe (probeMu).
	w.writer.Store(-1)
	w.fence(-1)
	if next >= 0 && !w.barrier(ctx, next) {
		// Not caught up: not the writer yet; probe again.
		next = -1
	}
	w.writer.Store(int32(next))
	w.probedAt = time.Now()
}

// ask is one host's state.
func (w *writerConnector) ask(ctx context.Context, i int) hostState {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	var readOnly, wsrepOn int
	var reject, ready, state, status string
	err := w.probes[i].QueryRowContext(ctx, statements.Tagged("writer_probe", "writer_probe")).Scan(&readOnly, &wsrepOn, &reject, &ready, &state, &status)
	switch {
	case err == nil:
	case errNumber(err) != 0, strings.Contains(err.Error(), "connection refused"):
		return hostRefused
	default:
		return hostSilent
	}
	if readOnly != 0 {
		return hostRefused
	}
	if wsrepOn != 0 && (ready != "ON" || state != "Synced" || status != "Primary" || reject != "NONE") {
		return hostRefused
	}
	return hostWritable
}

// barrier waits until host i has applied every write set the cluster had
// ordered when it was asked (wsrep_sync_wait), so that reads there see
// everything the previous writer acknowledged. A server without wsrep
// passes at once.
func (w *writerConnector) barrier(ctx context.Context, i int) bool {
	ctx, cancel := context.WithTimeout(ctx, barrierTimeout)
	defer cancel()
	conn, err := w.probes[i].Conn(ctx)
	if err != nil {
		return false
	}
	defer conn.Close()
	var wsrepOn int
	if err := conn.QueryRowContext(ctx, "SELECT @@global.wsrep_on").Scan(&wsrepOn); err != nil {
		return false
	}
	if wsrepOn == 0 {
		return true
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err != nil {
		return false
	}
	var one int
	err = conn.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION wsrep_sync_wait = 0")
	return err == nil
}

// fence closes every connection open to a host other than writer (-1:
// every connection).
func (w *writerConnector) fence(writer int) {
	w.mu.Lock()
	var victims []*trackedConn
	for i, set := range w.open {
		if i == writer {
			continue
		}
		for c := range set {
			victims = append(victims, c)
		}
	}
	w.mu.Unlock()
	for _, c := range victims {
		_ = c.Close()
	}
}

// dialer dials host i and tracks the connection until it is closed.
func (w *writerConnector) dialer(i int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetKeepAlive(true)
			_ = tc.SetKeepAlivePeriod(5 * time.Second)
		}
		c := &trackedConn{Conn: nc, w: w, host: i}
		w.mu.Lock()
		w.open[i][c] = struct{}{}
		w.mu.Unlock()
		if int(w.writer.Load()) != i {
			// Fenced while dialling.
			_ = c.Close()
			return nil, fmt.Errorf("holdfast/mysql: %s is no longer the writer: %w", addr, ErrNoWriter)
		}
		return c, nil
	}
}

type trackedConn struct {
	net.Conn
	w    *writerConnector
	host int
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.w.mu.Lock()
		delete(c.w.open[c.host], c)
		c.w.mu.Unlock()
	})
	return c.Conn.Close()
}

// erWsrepNotReady is MariaDB's answer on a Galera node that is not in the
// primary component or rejects queries (ER_UNKNOWN_COM_ERROR, "WSREP has
// not yet prepared node for application use").
const erWsrepNotReady = 1047

// erErrorDuringCommit is COMMIT failing inside the server; on Galera, "Error
// while appending streaming replication fragment (provider status: Not
// connected to Primary Component)" when the node lost the primary component
// during the COMMIT (seen in TestFailover's kill round). Whether the others
// ordered the write set is unknown: treated as erWsrepNotReady.
const erErrorDuringCommit = 1180

// nodeUnusable reports an error that says the node cannot serve holdfast
// now: erWsrepNotReady, or ErrNoWriter from the multi-host connector. Both
// are classified as a lost connection (hooked into connectionLost,
// client.go): the client's own transaction runs again, on the next writer
// once the connector has moved; a caller's transaction is not retried in
// place; a COMMIT so answered is outcome_unknown (the node may have lost
// the primary component after the others ordered the write set).
func nodeUnusable(err error) bool {
	n := errNumber(err)
	return n == erWsrepNotReady || n == erErrorDuringCommit || errors.Is(err, ErrNoWriter) || badConnNoWrite(err)
}

// badConnNoWrite reports go-sql-driver's unexported errBadConnNoWrite ("bad
// connection": the socket failed before anything was sent) anywhere in
// err's chain. Some paths (a prepared statement's) return it as is; seen
// reaching a caller as an untyped error after the connector closed a
// connection. Nothing was sent: a lost connection, safe to retry.
func badConnNoWrite(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "bad connection" {
			return true
		}
	}
	return false
}

// nodeConn is a connection of the multi-host connector. A connection that
// answered erWsrepNotReady (its node left the primary component, or
// rejects queries) is not reused: a ROLLBACK so answered leaves the
// session inside its transaction, and the next BeginTx on it failed with
// 1568 ("Transaction characteristics can't be changed while a transaction
// is in progress"). database/sql closes it instead of pooling it
// (driver.Validator), and the connector probes at once.
type nodeConn struct {
	driver.Conn
	w   *writerConnector
	bad atomic.Bool
}

func (c *nodeConn) note(err error) error {
	if n := errNumber(err); n == erWsrepNotReady || n == erErrorDuringCommit || n == erTxInProgress {
		c.bad.Store(true)
		c.w.poke()
	}
	if err != nil && err.Error() == "bad connection" {
		// go-sql-driver's unexported errBadConnNoWrite, which some paths
		// return as is: the socket was closed (fenced) and nothing was
		// sent. Seen reaching a caller as an untyped error.
		c.bad.Store(true)
		return driver.ErrBadConn
	}
	return err
}

// erTxInProgress: SET TRANSACTION on a session still in a transaction.
const erTxInProgress = 1568

func (c *nodeConn) IsValid() bool {
	if c.bad.Load() {
		return false
	}
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *nodeConn) ResetSession(ctx context.Context) error {
	if c.bad.Load() {
		return driver.ErrBadConn
	}
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *nodeConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		if c.note(err); c.bad.Load() {
			// Nothing began: database/sql closes this connection and
			// begins on another.
			return nil, driver.ErrBadConn
		}
		return nil, err
	}
	return &nodeTx{Tx: tx, c: c}, nil
}

func (c *nodeConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	return st, c.note(err)
}

func (c *nodeConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	return r, c.note(err)
}

func (c *nodeConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	return r, c.note(err)
}

func (c *nodeConn) Ping(ctx context.Context) error {
	return c.note(c.Conn.(driver.Pinger).Ping(ctx))
}

func (c *nodeConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

type nodeTx struct {
	driver.Tx
	c *nodeConn
}

func (t *nodeTx) Commit() error   { return t.c.note(t.Tx.Commit()) }
func (t *nodeTx) Rollback() error { return t.c.note(t.Tx.Rollback()) }
