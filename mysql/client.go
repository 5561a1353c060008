package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
	"github.com/holdfast/holdfast/internal/sqltext"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the engine's embedded statements, by file name.
var statements = sqltext.Load("holdfast/mysql", sqlFiles, "sql")

// Client is a handle to holdfast's tables in one MySQL or MariaDB database.
// It is safe for concurrent use by any number of goroutines; any number of
// Clients, in any number of processes, may share a database.
type Client struct {
	// The engine (package engine): the operations written once, over
	// this package as its driver (enginedriver.go). Its methods are the
	// Client's.
	*engineClient

	db    *sql.DB
	cfg   holdfast.Config
	core  *engine.Core // the engine's driver-free logic (package engine)
	sql   map[string]string
	texts sync.Map          // textKey -> tagged statement text
	keys  sync.Map          // holdfast.Key -> keyInfo: a short-lived cache of per-key strategy
	depth hfdriver.DeepKeys // the batch keys deep enough for optimistic batches (combine.go)

	combinedGrants     atomic.Int64 // reservations granted by combined batches (committed or not)
	combinedOptimistic atomic.Int64 // combined batches run optimistic (combine.go)
	combinedShort      atomic.Int64 // optimistic batches that found a counter short and ran again locked

}

var _ holdfast.Engine = (*Client)(nil)

// engineClient is the engine over this package's driver; embedded under
// this name, its methods are the Client's and the field is not exported.
type engineClient = engine.Client[*sql.Tx]

// keyInfoTTL bounds how long a client trusts its cached view of a key's
// strategy. A stale view is safe (both buffers count as pooled), only
// slower: it takes from an empty buffer and falls back to the slow path.
const keyInfoTTL = 2 * time.Second

type keyInfo struct {
	strategy holdfast.Strategy
	cap      int
	at       time.Time
}

// New returns a Client on db. db's connections must be configured as
// Configure does (times parsed as UTC; arguments interpolated client-side
// is strongly recommended). New does not migrate: call migrations.Up first.
//
// The zero Config is filled in by holdfast.Config.WithDefaults, as on
// PostgreSQL: the zero Strategy means holdfast.StrategyBatch. StrategySlots
// is not offered (see the package documentation).
func New(db *sql.DB, cfg holdfast.Config) (*Client, error) {
	cfg, err := engine.Configure(cfg, Strategies())
	if err != nil {
		return nil, err
	}
	c := &Client{db: db, cfg: cfg, core: engine.NewCore(cfg, classifier{}), sql: statements.Map()}
	c.depth.Depth, c.depth.Max = OptimisticDepth, engine.DirtyKeysMax
	c.engineClient = engine.NewClient[*sql.Tx](c.core, (*engineDriver)(c))
	engine.LoadBuyerSecret(c.engineClient)
	return c, nil
}

// Open opens a pool on a mysql:// URL (mysql://user:password@host:port/db)
// or a go-sql-driver DSN, configured by Configure (and
// innodb_lock_wait_timeout from cfg.LockTimeout when set), and returns a
// Client on it. The pool allows maxConns connections (0 means 20).
// Config.StatementTimeout and IdleInTransactionTimeout have no portable
// MySQL equivalent and are not applied: bound calls with their context.
func Open(dsn string, maxConns int, cfg holdfast.Config) (*Client, error) {
	dc, err := ParseURL(dsn)
	if err != nil {
		return nil, err
	}
	Configure(dc)
	if cfg.LockTimeout > 0 {
		// InnoDB counts lock waits in whole seconds.
		dc.Params["innodb_lock_wait_timeout"] = fmt.Sprint(max(1, int((cfg.LockTimeout+time.Second-1)/time.Second)))
	}
	conn, err := NewConnector(dc) // multihost.go
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	if maxConns == 0 {
		maxConns = 20
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	c, err := New(db, cfg)
	if err != nil {
		db.Close()
	}
	return c, err
}

// LockWaitTimeoutDefault is the innodb_lock_wait_timeout (seconds) that
// Configure sets when the DSN names none: a transaction waiting this long for
// a row lock gives up and holdfast retries it, instead of InnoDB's default of
// 50 seconds.
const LockWaitTimeoutDefault = 5

// Configure sets what the engine needs of a connection: DATETIME values
// parsed as UTC times, arguments interpolated client-side (one round trip
// per statement instead of prepare, execute and close) and a bounded lock
// wait (LockWaitTimeoutDefault unless the DSN sets innodb_lock_wait_timeout).
func Configure(cfg *mysqldriver.Config) {
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	if _, ok := cfg.Params["innodb_lock_wait_timeout"]; !ok {
		cfg.Params["innodb_lock_wait_timeout"] = fmt.Sprint(LockWaitTimeoutDefault)
	}
}

// ParseURL turns a mysql:// (or mariadb://) URL,
// mysql://user:password@host:port/database?param=value, or a go-sql-driver
// DSN into a driver configuration.
func ParseURL(u string) (*mysqldriver.Config, error) {
	if !strings.HasPrefix(u, "mysql://") && !strings.HasPrefix(u, "mariadb://") {
		return mysqldriver.ParseDSN(u)
	}
	p, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	cfg := mysqldriver.NewConfig()
	if p.RawQuery != "" {
		if cfg, err = mysqldriver.ParseDSN("/?" + p.RawQuery); err != nil {
			return nil, err
		}
	}
	cfg.Net, cfg.Addr = "tcp", p.Host
	if p.Port() == "" {
		cfg.Addr = net.JoinHostPort(p.Hostname(), "3306")
	}
	cfg.User = p.User.Username()
	cfg.Passwd, _ = p.User.Password()
	cfg.DBName = strings.TrimPrefix(p.Path, "/")
	return cfg, nil
}

// TxOptions are the options holdfast begins its own transactions with, and
// the ones a caller's transaction should have for the …Tx operations:
// READ COMMITTED, so that FOR UPDATE SKIP LOCKED on an empty range takes no
// gap locks (which under REPEATABLE READ block the inserts that refill it),
// and so that every statement reads the latest committed state.
func TxOptions() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelReadCommitted}
}

// DB is the connection pool the client runs on.
func (c *Client) DB() *sql.DB { return c.db }

// Config is the client's configuration with defaults filled in.
func (c *Client) Config() holdfast.Config { return c.cfg }

type textKey struct{ route, name, tag string }

// q returns the named statement prefixed with the comment that attributes
// it to its route and to the caller's holdfast.WithTag tag (seed 003's
// per-caller connection attribution: visible in the process list and the
// slow log). The comment is the only text ever added to the embedded SQL.
// Texts are cached per route, statement and tag.
func (c *Client) q(ctx context.Context, route, name string) string {
	k := textKey{route, name, holdfast.Tag(ctx)}
	if s, ok := c.texts.Load(k); ok {
		return s.(string)
	}
	body, ok := c.sql[name]
	if !ok {
		panic("holdfast/mysql: no statement " + name)
	}
	s := comment(ctx, route) + body
	c.texts.Store(k, s)
	return s
}

// comment is the comment that attributes a statement to its route and the
// caller's tag, with a trailing space: /* app='holdfast',route='reserve',
// tag='checkout' */ (sqltext.Prefix, which also escapes what could end the
// comment or the quoted value).
func comment(ctx context.Context, route string) string {
	return sqltext.Prefix(route, holdfast.Tag(ctx))
}

// takePoolText is the pool take for n pool lines: n copies of the embedded
// take_pool_line.sql joined by UNION ALL, so a cart's units are fetched in
// one round trip (seed decision 4). Only the embedded text is repeated;
// every value is a bound argument. Cached per n, which LinesPerCartMax
// bounds.
func (c *Client) takePoolText(ctx context.Context, route string, n int) string {
	k := textKey{route, fmt.Sprintf("take_pool_line*%d", n), holdfast.Tag(ctx)}
	if s, ok := c.texts.Load(k); ok {
		return s.(string)
	}
	frag := strings.TrimSpace(c.sql["take_pool_line"])
	parts := make([]string, n)
	for i := range parts {
		parts[i] = frag
	}
	s := comment(ctx, route) + strings.Join(parts, "\nUNION ALL\n")
	c.texts.Store(k, s)
	return s
}

// now is the injected clock as a statement argument; nil lets the database
// clock decide.
func (c *Client) now() any {
	if c.cfg.Now == nil {
		return nil
	}
	return c.cfg.Now().UTC()
}

// The sentinels an attempt answers the engine's retry policy with
// (package engine/driver).
var (
	errSlowPath = hfdriver.ErrSlowPath
	errRetry    = hfdriver.ErrRetry
	errRollback = hfdriver.ErrRollback
)

// run executes fn in a transaction: the client's own (outer nil, READ
// COMMITTED) or a savepoint in the caller's outer transaction. Transactions
// rolled back for a transient reason (deadlock, lock wait timeout, lost
// connection before or — for idempotent operations — during COMMIT) run
// again, at most Config.RetryMax times with jittered exponential backoff.
// In a caller's transaction a deadlock, or any error after which the
// savepoint is gone (InnoDB rolled the whole transaction back, the caller's
// work included), is never retried: it answers holdfast.ErrTxRolledBack.
func (c *Client) run(ctx context.Context, outer *sql.Tx, route string, idempotent bool, fn func(tx *sql.Tx, level int) error) error {
	return c.runSlow(ctx, outer, route, idempotent, nil, fn)
}

// runSlow is run with beforeSlow called between the rolled-back fast
// attempt and the first slow one, outside any transaction. The policy —
// what runs again, how often, and what the last answer says — is the
// engine's one (engine.Core.Run).
func (c *Client) runSlow(ctx context.Context, outer *sql.Tx, route string, idempotent bool, beforeSlow func() error, fn func(tx *sql.Tx, level int) error) error {
	return c.core.Run(ctx, route, outer == nil, idempotent, beforeSlow, func(level int) error {
		return c.once(ctx, outer, route, func(tx *sql.Tx) error { return fn(tx, level) })
	})
}

func (c *Client) once(ctx context.Context, outer *sql.Tx, route string, fn func(tx *sql.Tx) error) error {
	if outer != nil {
		tag := comment(ctx, route)
		if _, err := outer.ExecContext(ctx, tag+"SAVEPOINT holdfast"); err != nil {
			return err
		}
		if err := fn(outer); err != nil {
			if connectionLost(err) {
				return err
			}
			if errNumber(err) == erLockDeadlock {
				return txRolledBack(route, err)
			}
			if _, rerr := outer.ExecContext(context.WithoutCancel(ctx), tag+"ROLLBACK TO SAVEPOINT holdfast"); rerr != nil {
				if errNumber(rerr) == erSavepointMissing {
					// InnoDB rolled the whole transaction back (1467, or
					// 1205 under innodb_rollback_on_timeout), savepoints
					// with it: the session is in autocommit now.
					return txRolledBack(route, err)
				}
				return errors.Join(err, rerr)
			}
			return err
		}
		_, err := outer.ExecContext(ctx, tag+"RELEASE SAVEPOINT holdfast")
		return err
	}
	tx, err := c.db.BeginTx(ctx, TxOptions())
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := ctx.Err(); err != nil {
		// Not sent: a COMMIT refused for a done context is not in doubt.
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return &hfdriver.CommitError{Err: err}
	}
	return nil
}

// txRolledBack is the answer of a …Tx call whose caller's transaction
// InnoDB rolled back (engine.TxRolledBack).
func txRolledBack(route string, err error) error { return engine.TxRolledBack(route, err) }

// MySQL and MariaDB error numbers the engine treats specially: the one place
// server errors are mapped to holdfast's.
const (
	erDupEntry       = 1062
	erServerShutdown = 1053
	// erTooManyConnections: the server is full (max_connections).
	erTooManyConnections = 1040
	erLockWaitTimeout    = 1205
	erLockDeadlock       = 1213
	// erLockNowait is MySQL's answer to a NOWAIT read of a locked row;
	// MariaDB answers erLockWaitTimeout.
	erLockNowait = 3572
	// erAutoincReadFailed is InnoDB failing to take a table's AUTO-INC
	// lock: under innodb_autoinc_lock_mode = 1 (MariaDB's default) an
	// INSERT … SELECT holds it to the statement's end, and the event
	// triggers (migration 005) insert into holdfast_events from inside such
	// statements, so two transactions can deadlock on two tables' AUTO-INC
	// locks. InnoDB reports the victim as 1467, not 1213; the statement
	// (and, for a deadlock, the transaction) is rolled back like a
	// deadlock's, so it is retried the same way.
	erAutoincReadFailed = 1467
	erParseError        = 1064
	erQueryInterrupted  = 1317
	erConnectionKilled  = 1927 // MariaDB: KILL CONNECTION
	erStatementTimeout  = 1969 // MariaDB: max_statement_time
	erExecutionTimeout  = 3024 // MySQL: max_execution_time
	erServerGone        = 2006 // client: server has gone away
	erServerLost        = 2013 // client: lost connection during query
	erOptionPreventsRun = 1290 // --read-only and friends, e.g. during failover
	// erSavepointMissing: ROLLBACK TO SAVEPOINT after the transaction
	// ended (InnoDB rolled it back).
	erSavepointMissing = 1305
	// erSignalException is the number of an error a SIGNAL raised (the
	// placement guard's HF001).
	erSignalException = 1644
)

// sqlState is the SQLSTATE of a server error ("" for none).
func sqlState(err error) string {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) && me.SQLState != [5]byte{} {
		return string(me.SQLState[:])
	}
	return ""
}

func errNumber(err error) uint16 {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// retryable reports whether the whole transaction may be run again: the
// server rolled it (or its last statement) back for a reason a retry can
// clear.
func retryable(err error) bool {
	switch errNumber(err) {
	case erLockDeadlock, erLockWaitTimeout, erAutoincReadFailed:
		return true
	case erParseError:
		// MariaDB parses a table's triggers when it opens the table; a
		// connection killed (KILL, max_statement_time) during that parse
		// leaves that table instance reporting "Unknown trigger has an error
		// in its body: 'Query was empty'" to the next statements that use
		// it (seen under TestKilledConnections with the event triggers).
		// It fails at table open, before the statement changes anything,
		// and the transaction is rolled back: retried, on another
		// connection, like a deadlock; after RetryMax, ErrUnavailable.
		return strings.Contains(err.Error(), "has an error in its body")
	}
	return false
}

func timedOut(err error) bool {
	switch errNumber(err) {
	case erStatementTimeout, erExecutionTimeout, erQueryInterrupted, erOptionPreventsRun:
		return true
	}
	return false
}

// Unreachable reports errors of the database connection itself, met by
// code outside the engine's own runner (the service's key store, its
// readiness check): this package is the one place that classifies MySQL's
// errors; the HTTP layer asks it.
func Unreachable(err error) bool {
	return connectionLost(err) || errNumber(err) == erTooManyConnections
}

// connectionLost reports errors where the connection failed; the outcome of
// a COMMIT in flight is unknown.
func connectionLost(err error) bool {
	if err == nil {
		return false
	}
	if nodeUnusable(err) { // multihost.go
		return true
	}
	switch errNumber(err) {
	case erServerShutdown, erConnectionKilled, erServerGone, erServerLost:
		return true
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysqldriver.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") ||
		strings.Contains(msg, "connection refused")
}

// commitUnacknowledged reports a COMMIT the server did not answer: it may
// have committed. A server's own error answer (other than a killed or
// shutting-down connection, which does not tell) means it did not. A
// context that ended during COMMIT makes the driver drop the connection
// without reading the answer: unacknowledged too (once checks the context
// before sending COMMIT, so one that was never sent is not a commitError).
func commitUnacknowledged(err error) bool {
	var ce *hfdriver.CommitError
	if !errors.As(err, &ce) {
		return false
	}
	if errors.Is(ce.Err, sql.ErrTxDone) {
		return false
	}
	return connectionLost(ce.Err) || errNumber(ce.Err) == 0 ||
		errors.Is(ce.Err, context.Canceled) || errors.Is(ce.Err, context.DeadlineExceeded)
}

// isDup reports a duplicate-key error.
func isDup(err error) bool { return errNumber(err) == erDupEntry }

// classifier is the driver's error classifier (engine/driver.Classifier):
// the engine's retry policy asks it, and only it, about MySQL's errors.
type classifier struct{}

func (classifier) Code(err error) string {
	if n := errNumber(err); n != 0 {
		return fmt.Sprint(n)
	}
	return ""
}
func (classifier) Retryable(err error) bool            { return retryable(err) }
func (classifier) ConnectionLost(err error) bool       { return connectionLost(err) }
func (classifier) CommitUnacknowledged(err error) bool { return commitUnacknowledged(err) }

// Unavailable: statement and execution timeouts, an interrupted query, a
// read-only server.
func (classifier) Unavailable(err error) bool { return timedOut(err) }

// CallerTxLost: InnoDB rolls the whole transaction back on a deadlock, the
// caller's work and savepoints included.
func (classifier) CallerTxLost(err error) bool { return errNumber(err) == erLockDeadlock }
