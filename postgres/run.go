package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/engine/driver"
)

// beginner starts a transaction: a *pgxpool.Pool for the client's own, a
// caller's pgx.Tx for a savepoint inside it.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// The sentinels an attempt answers the engine's retry policy with
// (package engine/driver).
var (
	errSlowPath = driver.ErrSlowPath
	errRetry    = driver.ErrRetry
	errRollback = driver.ErrRollback
)

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

// runSlow is run with beforeSlow called between the rolled-back fast attempt
// and the first slow one, outside any transaction. The policy — what runs
// again, how often, and what the last answer says — is the engine's one
// (engine.Core.Run).
func (c *Client) runSlow(ctx context.Context, b beginner, route string, own, idempotent bool, beforeSlow func() error, fn func(tx pgx.Tx, level int) error) error {
	return c.core.Run(ctx, route, own, idempotent, beforeSlow, func(level int) error {
		return c.once(ctx, b, route, own, func(tx pgx.Tx) error { return fn(tx, level) })
	})
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
		return &driver.CommitError{Err: err}
	}
	return nil
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
	var ce *driver.CommitError
	if !errors.As(err, &ce) || errors.Is(ce.Err, pgx.ErrTxCommitRollback) || errors.Is(ce.Err, pgx.ErrTxClosed) {
		return false
	}
	if pgconn.SafeToRetry(ce.Err) && (errors.Is(ce.Err, context.Canceled) || errors.Is(ce.Err, context.DeadlineExceeded)) {
		// The context was done before COMMIT was written ("context
		// already done"): never sent, the transaction rolls back.
		return false
	}
	state := SQLState(ce.Err)
	return state == "" || strings.HasPrefix(state, "08")
}
