package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
)

// beginner starts a transaction: a *pgxpool.Pool for the client's own, a
// caller's pgx.Tx for a savepoint inside it.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// errSlowPath asks run to roll back and run the operation again one level
// slower (see slowLevelMax). It never reaches a caller.
var errSlowPath = errors.New("holdfast: take the slow path")

// errRetry asks run to roll back and run the operation again, counting it as
// a retry: a race with a concurrent purge or strategy change.
var errRetry = errors.New("holdfast: transient race, retrying")

// errRollback asks run to roll the transaction back and report success: the
// operation found its answer already in place (a replayed reservation) and
// what this attempt did must not be kept.
var errRollback = errors.New("holdfast: roll back, done")

// commitError marks a failure of COMMIT itself: the outcome is unknown.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit: " + e.err.Error() }

func (e *commitError) Unwrap() error { return e.err }

// run executes fn in a transaction and commits it: one the client opens when
// own, else a savepoint in the caller's transaction. Transactions that the
// server rolled back for a transient reason (deadlock, serialization
// failure, lock timeout, lost connection before or — for idempotent
// operations — during commit) run again, at most Config.RetryMax times with
// jittered exponential backoff. fn returning errSlowPath runs it again one
// level slower, at most slowLevelMax times.
func (c *Client) run(ctx context.Context, b beginner, route string, own, idempotent bool, fn func(tx pgx.Tx, level int) error) error {
	return c.runSlow(ctx, b, route, own, idempotent, nil, fn)
}

// slowLevelMax bounds how often an operation asks for a slower path
// (errSlowPath): fast, then slow, then slowest.
const slowLevelMax = 2

// runSlow is run with beforeSlow called between the rolled-back fast attempt
// and the first slow one, outside any transaction.
func (c *Client) runSlow(ctx context.Context, b beginner, route string, own, idempotent bool, beforeSlow func() error, fn func(tx pgx.Tx, level int) error) error {
	level := 0
	r := retrier{c: c, route: route}
	for {
		err := c.once(ctx, b, route, own, func(tx pgx.Tx) error { return fn(tx, level) })
		if err == nil || errors.Is(err, errRollback) {
			return nil
		}
		if errors.Is(err, errSlowPath) && level < slowLevelMax {
			level++
			if level == 1 && beforeSlow != nil {
				err = beforeSlow()
			}
			if err == nil || errors.Is(err, errSlowPath) {
				continue
			}
		}
		var ce *commitError
		lost := connectionLost(err)
		if own && commitUnacknowledged(err) {
			r.doubt = true
		}
		canRetry := retryable(err) || errors.Is(err, errRetry) || (own && lost && (idempotent || !errors.As(err, &ce)))
		if again, berr := r.again(ctx, err, canRetry); !again {
			if berr != nil {
				err = berr
			}
			return c.finalErr(route, err, own, idempotent, r.doubt)
		}
	}
}

// retrier is the engine's one retry policy, used by every transaction the
// client runs (run, runSlow) and by combined batches (combine.go): which
// failures run again, at most Config.RetryMax times, the jittered backoff
// between attempts, what the Observer is told, and whether any attempt's
// COMMIT went unacknowledged (doubt) — then the attempt may have committed
// and, if the retries fail without learning the outcome, the answer must
// say so (finalErr), never "nothing happened".
type retrier struct {
	c       *Client
	route   string
	attempt int
	doubt   bool
}

// again reports whether to run the attempt that failed with err again,
// having backed off: only when canRetry (the caller's judgement of err),
// retries are left and ctx is live. berr is the context's error when the
// backoff was cut short.
func (r *retrier) again(ctx context.Context, err error, canRetry bool) (again bool, berr error) {
	if !canRetry || r.attempt >= r.c.cfg.RetryMax || ctx.Err() != nil {
		return false, nil
	}
	r.attempt++
	state := SQLState(err)
	switch {
	case errors.Is(err, errRetry):
		state = "race"
	case state == "":
		state = "connection"
	}
	r.c.cfg.Observer.Retry(r.route, state)
	if err := r.c.backoff(ctx, r.attempt); err != nil {
		return false, err
	}
	return true, nil
}

// finalErr is mapErr for the last attempt of an operation; doubt says an
// earlier attempt's COMMIT went unacknowledged. A last answer that says
// nothing happened (unavailable, or the caller's context ended) is then
// not the truth: that earlier attempt may have committed.
func (c *Client) finalErr(route string, err error, own, idempotent, doubt bool) error {
	mapped := c.mapErr(route, err, own, idempotent)
	if doubt && !errors.Is(mapped, holdfast.ErrOutcomeUnknown) && (errors.Is(mapped, holdfast.ErrUnavailable) ||
		errors.Is(mapped, context.Canceled) || errors.Is(mapped, context.DeadlineExceeded)) {
		return fmt.Errorf("%w: %s: an earlier attempt's commit was not acknowledged and the retries did not learn its outcome: %v", holdfast.ErrOutcomeUnknown, route, mapped)
	}
	return mapped
}

// backoff waits before retry number attempt: jittered, exponential, at most
// about 128 ms, or until ctx ends.
func (c *Client) backoff(ctx context.Context, attempt int) error {
	d := time.Duration(1<<min(attempt, 7)) * time.Millisecond
	d = d/2 + rand.N(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) once(ctx context.Context, b beginner, route string, own bool, fn func(tx pgx.Tx) error) error {
	if own {
		pool := c.pool
		if p, ok := b.(*pgxpool.Pool); ok {
			pool = p
		}
		b = ownBeginner{c: c, pool: pool, route: route}
	} else if outer, ok := b.(pgx.Tx); ok {
		b = savepointBeginner{c: c, outer: outer, route: route}
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return &commitError{err}
	}
	return nil
}

// mapErr turns what is left after retries into holdfast's typed errors.
func (c *Client) mapErr(route string, err error, own, idempotent bool) error {
	var ae *holdfast.ArgumentError
	var ie *holdfast.InsufficientStockError
	var ee *holdfast.ExpiredError
	switch {
	case errors.As(err, &ae), errors.As(err, &ie), errors.As(err, &ee),
		errors.Is(err, holdfast.ErrIdempotencyConflict), errors.Is(err, holdfast.ErrNotFound),
		errors.Is(err, holdfast.ErrHoldClaimed), errors.Is(err, holdfast.ErrHoldReleased),
		errors.Is(err, holdfast.ErrHoldExpired), errors.Is(err, holdfast.ErrLifetimeExceeded),
		errors.Is(err, holdfast.ErrOverCommitted),
		errors.Is(err, holdfast.ErrRevisionConflict),
		errors.Is(err, holdfast.ErrWaitlisted), errors.Is(err, holdfast.ErrWaitExpired),
		errors.Is(err, holdfast.ErrWaitCancelled), errors.Is(err, holdfast.ErrWaitUnservable):
		return err
	}
	// A COMMIT that was sent and not acknowledged — the connection failed,
	// or ctx ended while the server was still committing — may have
	// committed. This is checked before context errors: "the caller gave
	// up" must not read as "nothing happened". The cause is kept as text
	// only, so errors.Is(err, context.Canceled) does not match and no layer
	// above turns it into a retryable answer.
	if own && commitUnacknowledged(err) {
		return fmt.Errorf("%w: %s: commit not acknowledged: %v", holdfast.ErrOutcomeUnknown, route, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("holdfast: %s: %w", route, err)
	}
	if connectionLost(err) || retryable(err) || errors.Is(err, errRetry) || SQLState(err) == sqlstateQueryCanceled {
		return fmt.Errorf("%w: %s: %w", holdfast.ErrUnavailable, route, err)
	}
	return fmt.Errorf("holdfast: %s: %w", route, err)
}

// commitUnacknowledged reports a COMMIT that the server did not answer: it
// may have committed. A server's own error answer (the backend was
// terminated before committing, say) means it did not; one from PgBouncer
// in class 08 (its server connection died under the COMMIT) does not tell.
// A context that was done before COMMIT was written means it was never
// sent. Any other failure counts as unanswered, even one pgx calls safe to
// retry: a connection the fault proxy cut right after forwarding COMMIT
// surfaces as "conn closed", yet the COMMIT had reached the server.
func commitUnacknowledged(err error) bool {
	var ce *commitError
	if !errors.As(err, &ce) || errors.Is(ce.err, pgx.ErrTxCommitRollback) || errors.Is(ce.err, pgx.ErrTxClosed) {
		return false
	}
	if pgconn.SafeToRetry(ce.err) && (errors.Is(ce.err, context.Canceled) || errors.Is(ce.err, context.DeadlineExceeded)) {
		// The context was done before COMMIT was written ("context
		// already done"): never sent, the transaction rolls back.
		return false
	}
	state := SQLState(ce.err)
	return state == "" || strings.HasPrefix(state, "08")
}
