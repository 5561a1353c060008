package postgres

import (
	"errors"
	"github.com/jackc/pgx/v5/pgconn"
	"io"
	"net"
	"strings"
)

// SQLSTATEs the engine treats specially: the one place PostgreSQL errors are
// mapped to holdfast's.
const (
	sqlstateDeadlock          = "40P01"
	sqlstateSerialization     = "40001"
	sqlstateCheckViolation    = "23514"
	sqlstateLockNotAvailable  = "55P03" // lock_timeout
	sqlstateQueryCanceled     = "57014" // statement_timeout
	sqlstateIdleInTransaction = "25P03"
	sqlstateAdminShutdown     = "57P01"
	sqlstateCannotConnectNow  = "57P03"
	// sqlstateRefused is holdfast_refuse's (migration 27): a pipelined
	// statement stopped the pipeline; the driver answers it in the same
	// attempt (reserveTxPipelined), never to a user.
	sqlstateRefused = "HF010"
)

// SQLState returns the SQLSTATE of a PostgreSQL error in err's chain, or "".
func SQLState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// retryable reports whether the whole transaction may be run again: it was
// rolled back by the server for a reason that a retry can clear.
func retryable(err error) bool {
	switch SQLState(err) {
	case sqlstateDeadlock, sqlstateSerialization, sqlstateLockNotAvailable,
		sqlstateAdminShutdown, sqlstateCannotConnectNow, sqlstateIdleInTransaction,
		sqlstateReadOnly, sqlstateCrashShutdown: // the primary was demoted or crashed (follow.go)
		return true
	}
	return false
}

// connectionLost reports errors where the connection failed; the outcome of a
// COMMIT in flight is unknown.
func connectionLost(err error) bool {
	if err == nil {
		return false
	}
	if RefusedByOneHost(err) {
		return true
	}
	if state := SQLState(err); state != "" {
		// Class 08, connection exception: what PgBouncer answers when its
		// server connection died under the client (08P01 "server conn
		// crashed?") or the server cannot be reached.
		return strings.HasPrefix(state, "08")
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	return pgconn.SafeToRetry(err) || isNetErr(err)
}

// RefusedByOneHost reports a failure to connect through a connection
// string of several hosts that ended at a host refusing the login (28P01,
// 28000, 3D000, 42501): pgx stops there without trying the hosts after it,
// and a standby that has not replayed the role or database yet refuses it
// during a failover while the primary takes it. It is a connection failure
// to retry (Follow then tries that host last), not a verdict on the
// password; Follow's LoginRefusedError is the verdict, once every host
// refused. With one host a refused login is final.
func RefusedByOneHost(err error) bool { return OneHostRefusal(err) != nil }

// OneHostRefusal is the refusal a multi-host connect stopped at
// (RefusedByOneHost), or nil.
func OneHostRefusal(err error) *pgconn.PgError {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || ce.Config == nil || len(ce.Config.Fallbacks) == 0 {
		return nil
	}
	// The hosts' errors in the order tried: pgx stopped at the last.
	last := ce.Unwrap()
	if j, ok := last.(interface{ Unwrap() []error }); ok {
		if errs := j.Unwrap(); len(errs) > 0 {
			last = errs[len(errs)-1]
		}
	}
	var pe *pgconn.PgError
	if errors.As(last, &pe) && loginRefusal(pe.Code) {
		return pe
	}
	return nil
}

// loginRefusedFinal reports a refused login no retry clears: Follow's
// LoginRefusedError (every host refused), or a refusal through a
// connection string of one host.
func loginRefusedFinal(err error) bool {
	var lre *LoginRefusedError
	if errors.As(err, &lre) {
		return true
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) && loginRefusal(SQLState(err)) && !RefusedByOneHost(err)
}

func isNetErr(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "connection reset") ||
		strings.Contains(msg, "broken pipe") || strings.Contains(msg, "failed to connect") ||
		strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "closed pool")
}

// Unreachable reports errors of the database connection itself — lost,
// refused, or the server shutting down or full (57P01–57P03, 53300) — met
// by code outside the engine's own runner (the service's key store, its
// readiness check). This package is the one place that classifies
// PostgreSQL's errors; the HTTP layer asks it.
func Unreachable(err error) bool {
	if connectionLost(err) {
		return true
	}
	switch SQLState(err) {
	case sqlstateAdminShutdown, "57P02", sqlstateCannotConnectNow, "53300", sqlstateReadOnly:
		return true
	}
	return false
}

// classifier is the driver's error classifier (engine/driver.Classifier):
// the engine's retry policy asks it, and only it, about PostgreSQL's
// errors.
type classifier struct{}

func (classifier) Code(err error) string               { return SQLState(err) }
func (classifier) Retryable(err error) bool            { return retryable(err) }
func (classifier) ConnectionLost(err error) bool       { return connectionLost(err) }
func (classifier) CommitUnacknowledged(err error) bool { return commitUnacknowledged(err) }

// Unavailable: a statement cancelled by statement_timeout.
func (classifier) Unavailable(err error) bool { return SQLState(err) == sqlstateQueryCanceled }

// CallerTxLost: PostgreSQL rolls back to the savepoint, never the caller's
// whole transaction.
func (classifier) CallerTxLost(error) bool { return false }
