package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Following the primary of a highly available cluster (Patroni, or any
// manager that promotes a standby). pgx checks target_session_attrs only
// when it opens a connection: a pool can stay attached to a demoted or
// dead primary for as long as its connections live. Follow makes the pool
// drop its connections when one of them shows the primary is gone, so the
// next connection is chosen again among the hosts of the connection string.

// SQLSTATEs that say the server holdfast writes to is no longer the primary.
const (
	sqlstateReadOnly       = "25006" // read_only_sql_transaction: a standby, or a demoted primary
	sqlstateCrashShutdown  = "57P02" // crash_shutdown
	sqlstateDatabaseDroped = "57P04" // database_dropped
)

// FollowResetGap is the shortest time between two resets of a pool's
// connections by Follow: the bound on how often a failover makes the pool
// reconnect (the backoff). Each reset closes every idle connection and
// marks every connection in use to be closed when released.
const FollowResetGap = 250 * time.Millisecond

// FollowConnectTimeout is the per-host connect timeout Follow sets when the
// connection string names none: a frozen primary accepts TCP connections
// and never answers, and without one every new connection would wait on it.
const FollowConnectTimeout = 2 * time.Second

// FollowRefusalTTL is how long Follow remembers that a host refused the
// login: for that long the host is tried last, and when every host of the
// connection string refused within it, a new connection is answered with
// LoginRefusedError without dialling. A login the host accepts forgets
// its refusal at once.
const FollowRefusalTTL = 10 * time.Second

// Follower resets a pool whose primary is gone. It is safe for concurrent
// use. Create it with Follow before the pool; call Attach with the pool.
type Follower struct {
	pool      atomic.Pointer[pgxpool.Pool]
	lastReset atomic.Int64 // unix ns
	resets    atomic.Int64

	mu        sync.Mutex
	preferred string             // host:port of the last connection that passed target_session_attrs
	avoid     string             // host:port that last showed it is not the primary
	refused   map[string]refusal // host:port -> its last refused login, at most one per host
	multi     bool
	hosts     []hostPort          // the connection string's hosts
	resolved  map[string][]string // host name -> the addresses it last resolved to
}

// hostPort is one host of the connection string, as written.
type hostPort struct {
	host string
	port uint16
}

// refusal is a host's refused login: when, and the server's answer.
type refusal struct {
	at  time.Time
	err *pgconn.PgError
}

// Follow prepares cfg to follow the primary: when the connection string
// names several hosts it defaults target_session_attrs to read-write (a
// standby is never chosen) and the per-host connect timeout to
// FollowConnectTimeout, tries the host that was last the primary first and
// the one that last refused a write last, and watches every statement's
// error (a tracer wrapping any cfg already has): on a read-only answer
// (25006), a connection lost, or the server shutting down or terminating
// its sessions (57P01, 57P02, class 08) it resets the pool, at most once
// per FollowResetGap. With one host it only watches errors. Either way a
// COMMIT answered with the warning that its wait for the synchronous
// standby was cancelled counts as unacknowledged (outcome_unknown), not as
// success.
//
// With several hosts it also gets past a host that refuses the login. pgx,
// like libpq, stops at the first host that refuses it (28P01, 3D000,
// 42501) without trying the others; during a failover a standby that has
// not replayed the role or the database yet refuses it while the primary
// would take it. Follow remembers the refusal (FollowRefusalTTL) and tries
// that host last, and the engine's classifier counts such a connection
// failure as one to retry, not as a wrong password. When every host
// refused within FollowRefusalTTL the login is wrong for real: the pool
// answers LoginRefusedError.
func Follow(cfg *pgxpool.Config) *Follower {
	f := &Follower{multi: len(cfg.ConnConfig.Fallbacks) > 0}
	if f.multi {
		f.hosts = append(f.hosts, hostPort{cfg.ConnConfig.Host, cfg.ConnConfig.Port})
		for _, fb := range cfg.ConnConfig.Fallbacks {
			f.hosts = append(f.hosts, hostPort{fb.Host, fb.Port})
		}
		// A connection knows the address it reached, the connection string
		// names hosts: the resolver's answers tie one to the other.
		if lookup := cfg.ConnConfig.LookupFunc; lookup != nil {
			cfg.ConnConfig.LookupFunc = func(ctx context.Context, host string) ([]string, error) {
				addrs, err := lookup(ctx, host)
				if err == nil {
					f.mu.Lock()
					if f.resolved == nil {
						f.resolved = map[string][]string{}
					}
					if len(f.resolved) < len(f.hosts) || f.resolved[host] != nil {
						f.resolved[host] = addrs
					}
					f.mu.Unlock()
				}
				return addrs, err
			}
		}
		validate := cfg.ConnConfig.ValidateConnect
		if validate == nil {
			validate = pgconn.ValidateConnectTargetSessionAttrsReadWrite
		}
		// The host took the login (a standby too): its refusal is over.
		cfg.ConnConfig.ValidateConnect = func(ctx context.Context, pc *pgconn.PgConn) error {
			f.accepted(f.addr(pc))
			return validate(ctx, pc)
		}
		onErr := cfg.ConnConfig.OnPgError
		cfg.ConnConfig.OnPgError = func(pc *pgconn.PgConn, pe *pgconn.PgError) bool {
			fatal := strings.EqualFold(pe.Severity, "FATAL")
			if fatal && loginRefusal(pe.Code) {
				f.refusedBy(f.addr(pc), pe)
			}
			if onErr != nil {
				return onErr(pc, pe)
			}
			return !fatal // pgconn's default: a FATAL error closes the connection
		}
		if cfg.ConnConfig.ConnectTimeout == 0 {
			cfg.ConnConfig.ConnectTimeout = FollowConnectTimeout
		}
		before := cfg.BeforeConnect
		cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
			if err := f.order(cc); err != nil {
				return err
			}
			if before != nil {
				return before(ctx, cc)
			}
			return nil
		}
		after := cfg.AfterConnect
		cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			a := f.addr(conn.PgConn())
			f.mu.Lock()
			f.preferred = a
			if f.avoid == f.preferred {
				f.avoid = ""
			}
			f.mu.Unlock()
			if after != nil {
				return after(ctx, conn)
			}
			return nil
		}
	}
	cfg.ConnConfig.Tracer = &followTracer{f: f, next: cfg.ConnConfig.Tracer}
	cfg.ConnConfig.OnNotice = noticeHandler(cfg.ConnConfig.OnNotice)
	return f
}

// Attach names the pool Follow resets.
func (f *Follower) Attach(pool *pgxpool.Pool) { f.pool.Store(pool) }

// Resets counts the pool resets so far.
func (f *Follower) Resets() int64 { return f.resets.Load() }

// Observe resets the pool when err says its primary is gone; conn, when
// not nil, is the connection that met it (its host is tried last).
func (f *Follower) Observe(conn *pgconn.PgConn, err error) {
	if !primaryGone(err) {
		return
	}
	if a := f.addr(conn); a != "" {
		f.mu.Lock()
		f.avoid = a
		if f.preferred == a {
			f.preferred = ""
		}
		f.mu.Unlock()
	}
	now := time.Now().UnixNano()
	last := f.lastReset.Load()
	if now-last < int64(FollowResetGap) || !f.lastReset.CompareAndSwap(last, now) {
		return
	}
	if p := f.pool.Load(); p != nil {
		f.resets.Add(1)
		p.Reset()
	}
}

// order puts the preferred host first, the avoided one after the others
// and those that refused the login last; when every host refused the login
// within FollowRefusalTTL it answers LoginRefusedError instead.
func (f *Follower) order(cc *pgx.ConnConfig) error {
	all := append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...)
	f.mu.Lock()
	preferred, avoid := f.preferred, f.avoid
	var refused map[string]*pgconn.PgError
	var last *refusal
	now := time.Now()
	for a, r := range f.refused {
		if now.Sub(r.at) >= FollowRefusalTTL {
			delete(f.refused, a)
			continue
		}
		if refused == nil {
			refused = map[string]*pgconn.PgError{}
		}
		refused[a] = r.err
		if last == nil || r.at.After(last.at) {
			last = &refusal{at: r.at, err: r.err}
		}
	}
	f.mu.Unlock()
	if preferred == "" && avoid == "" && len(refused) == 0 {
		return nil
	}
	var first, mid, after, lastHosts []*pgconn.FallbackConfig
	var hosts []string
	for _, fb := range all {
		a := net.JoinHostPort(fb.Host, strconv.Itoa(int(fb.Port)))
		hosts = append(hosts, a)
		switch _, refusedHere := refused[a]; {
		case refusedHere:
			lastHosts = append(lastHosts, fb)
		case a == preferred:
			first = append(first, fb)
		case a == avoid:
			after = append(after, fb)
		default:
			mid = append(mid, fb)
		}
	}
	if len(lastHosts) == len(all) {
		return &LoginRefusedError{User: cc.User, Database: cc.Database, Hosts: hosts, Err: last.err}
	}
	all = append(append(append(first, mid...), after...), lastHosts...)
	cc.Host, cc.Port, cc.TLSConfig = all[0].Host, all[0].Port, all[0].TLSConfig
	cc.Fallbacks = all[1:]
	return nil
}

// refusedBy records that host a refused the login with pe.
func (f *Follower) refusedBy(a string, pe *pgconn.PgError) {
	if a == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refused == nil {
		f.refused = map[string]refusal{}
	}
	f.refused[a] = refusal{at: time.Now(), err: pe}
	if f.preferred == a {
		f.preferred = ""
	}
}

// accepted forgets host a's refusal: it took the login.
func (f *Follower) accepted(a string) {
	f.mu.Lock()
	delete(f.refused, a)
	f.mu.Unlock()
}

// LoginRefusedError is the answer of a pool prepared by Follow when every
// host of its multi-host connection string refused the login within
// FollowRefusalTTL: the user, password or database of the connection
// string is wrong (or lacks the CONNECT privilege) on all of them, which a
// failover does not explain. It wraps the latest refusal, a
// *pgconn.PgError with SQLSTATE 28P01, 28000, 3D000 or 42501; the engine
// does not retry it.
type LoginRefusedError struct {
	User, Database string
	Hosts          []string // host:port, in the connection string's order
	Err            *pgconn.PgError
}

func (e *LoginRefusedError) Error() string {
	return fmt.Sprintf("every host of the connection string (%s) refused the login of user %q to database %q: %s (SQLSTATE %s)",
		strings.Join(e.Hosts, ", "), e.User, e.Database, e.Err.Message, e.Err.Code)
}

func (e *LoginRefusedError) Unwrap() error { return e.Err }

// loginRefusal reports the SQLSTATEs of a refused login: a wrong password
// or no such role (28P01, which is also what a standby that has not
// replayed CREATE ROLE answers), no pg_hba.conf entry or no LOGIN (28000),
// no such database (3D000), no CONNECT privilege (42501). pgx stops trying
// the other hosts at all but 28000.
func loginRefusal(code string) bool {
	switch code {
	case "28P01", "28000", "3D000", "42501":
		return true
	}
	return false
}

// addr is the host:port of the connection string that c reached (its
// remote address when no host of the string resolved to it).
func (f *Follower) addr(c *pgconn.PgConn) string {
	if c == nil {
		return ""
	}
	nc := c.Conn()
	if nc == nil || nc.RemoteAddr() == nil {
		return ""
	}
	ra := nc.RemoteAddr().String()
	ip, port, err := net.SplitHostPort(ra)
	if err != nil {
		return ra
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.hosts {
		if strconv.Itoa(int(h.port)) != port {
			continue
		}
		if h.host == ip {
			return net.JoinHostPort(h.host, port)
		}
		for _, a := range f.resolved[h.host] {
			if a == ip || a == ra {
				return net.JoinHostPort(h.host, port)
			}
		}
	}
	return ra
}

// primaryGone reports errors that say the server is no longer (or no
// longer reachably) the primary.
func primaryGone(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	switch SQLState(err) {
	case sqlstateReadOnly, sqlstateAdminShutdown, sqlstateCrashShutdown, sqlstateCannotConnectNow, sqlstateDatabaseDroped:
		return true
	}
	// A statement that timed out on the client: a frozen primary answers
	// nothing, and the pool's other connections to it would hang too.
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return connectionLost(err)
}

// followTracer watches each statement's end for primaryGone.
type followTracer struct {
	f    *Follower
	next pgx.QueryTracer
}

type followConnKey struct{}

func (t *followTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if t.next != nil {
		ctx = t.next.TraceQueryStart(ctx, conn, data)
	}
	return context.WithValue(ctx, followConnKey{}, conn)
}

func (t *followTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	if data.Err != nil {
		var pc *pgconn.PgConn
		if conn != nil {
			pc = conn.PgConn()
		}
		t.f.Observe(pc, data.Err)
	}
	if t.next != nil {
		t.next.TraceQueryEnd(ctx, conn, data)
	}
}

// IsPrimary reports whether the pool reaches a server that takes writes
// (not a standby, not read-only): what /readyz asks of a highly available
// cluster. The error is nil when it does; errNotPrimary-wrapped when it
// reaches only a standby.
func IsPrimary(ctx context.Context, pool *pgxpool.Pool) error {
	var ro string
	err := pool.QueryRow(ctx, "SHOW transaction_read_only").Scan(&ro)
	if err != nil {
		return err
	}
	if ro == "on" {
		return ErrNotPrimary
	}
	return nil
}

// ErrNotPrimary is IsPrimary's answer for a server that does not take
// writes (a standby, or a demoted primary).
var ErrNotPrimary = errors.New("postgres: the server does not take writes (a standby or read-only); no primary reachable")

// A COMMIT whose wait for the synchronous standby was cancelled (the
// client's context ended and pgx sent a cancel request, or
// statement_timeout) is answered with success plus a WARNING, "canceling
// wait for synchronous replication …: The transaction has already
// committed locally, but might not have been replicated to the standby."
// It may be lost when a standby is promoted (Patroni's documented caveat),
// so it is not an acknowledgement: commitChecked turns it into an
// unacknowledged commit (outcome_unknown), and a retry with the same
// checkout id then tells the truth.

// syncRepCancelled holds the connections on which the server sent that
// warning since their last commit was checked.
var syncRepCancelled sync.Map // *pgconn.PgConn -> struct{}

// errSyncRepCancelled is the commit error for that warning. It has no
// SQLSTATE, so commitUnacknowledged counts it as unanswered.
var errSyncRepCancelled = errors.New("the server committed locally but cancelled the wait for the synchronous standby: the commit may be lost on failover")

// noticeHandler records the synchronous-replication warning, then calls
// next.
func noticeHandler(next pgconn.NoticeHandler) pgconn.NoticeHandler {
	return func(c *pgconn.PgConn, n *pgconn.Notice) {
		if strings.Contains(n.Message, "wait for synchronous replication") {
			syncRepCancelled.Store(c, struct{}{})
		}
		if next != nil {
			next(c, n)
		}
	}
}

// commitChecked is err, the result of a COMMIT on conn, or
// errSyncRepCancelled when the COMMIT "succeeded" with the warning.
func commitChecked(conn *pgconn.PgConn, err error) error {
	if _, warned := syncRepCancelled.LoadAndDelete(conn); warned && err == nil {
		return errSyncRepCancelled
	}
	return err
}
