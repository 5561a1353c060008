package postgres

import (
	"context"
	"errors"
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

// Follower resets a pool whose primary is gone. It is safe for concurrent
// use. Create it with Follow before the pool; call Attach with the pool.
type Follower struct {
	pool      atomic.Pointer[pgxpool.Pool]
	lastReset atomic.Int64 // unix ns
	resets    atomic.Int64

	mu        sync.Mutex
	preferred string // host:port of the last connection that passed target_session_attrs
	avoid     string // host:port that last showed it is not the primary
	multi     bool
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
func Follow(cfg *pgxpool.Config) *Follower {
	f := &Follower{multi: len(cfg.ConnConfig.Fallbacks) > 0}
	if f.multi {
		if cfg.ConnConfig.ValidateConnect == nil {
			cfg.ConnConfig.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsReadWrite
		}
		if cfg.ConnConfig.ConnectTimeout == 0 {
			cfg.ConnConfig.ConnectTimeout = FollowConnectTimeout
		}
		before := cfg.BeforeConnect
		cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
			f.order(cc)
			if before != nil {
				return before(ctx, cc)
			}
			return nil
		}
		after := cfg.AfterConnect
		cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			f.mu.Lock()
			f.preferred = addr(conn.PgConn())
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
	if conn != nil {
		f.mu.Lock()
		if a := addr(conn); a != "" {
			f.avoid = a
			if f.preferred == a {
				f.preferred = ""
			}
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

// order puts the preferred host first and the avoided one last.
func (f *Follower) order(cc *pgx.ConnConfig) {
	f.mu.Lock()
	preferred, avoid := f.preferred, f.avoid
	f.mu.Unlock()
	if preferred == "" && avoid == "" {
		return
	}
	all := append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...)
	var first, mid, last []*pgconn.FallbackConfig
	for _, fb := range all {
		a := net.JoinHostPort(fb.Host, strconv.Itoa(int(fb.Port)))
		switch a {
		case preferred:
			first = append(first, fb)
		case avoid:
			last = append(last, fb)
		default:
			mid = append(mid, fb)
		}
	}
	all = append(append(first, mid...), last...)
	cc.Host, cc.Port, cc.TLSConfig = all[0].Host, all[0].Port, all[0].TLSConfig
	cc.Fallbacks = all[1:]
}

func addr(c *pgconn.PgConn) string {
	if c == nil {
		return ""
	}
	if ra := c.Conn(); ra != nil && ra.RemoteAddr() != nil {
		return ra.RemoteAddr().String()
	}
	return ""
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
