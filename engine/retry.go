package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Run runs an operation's attempts until one answers: attempt is one
// transaction at the given slowness level (0 fast, up to
// driver.SlowLevelMax). It is the engine's one retry policy, for both
// drivers:
//
//   - driver.ErrRollback is success (the answer was already in place);
//   - driver.ErrSlowPath runs the attempt again one level slower, calling
//     beforeSlow (outside any transaction) before the first slow one;
//   - a retryable failure, driver.ErrRetry, or — in the engine's own
//     transaction — a lost connection before COMMIT (or during it, for an
//     idempotent operation) runs it again, at most Config.RetryMax times,
//     with jittered exponential backoff; in a caller's transaction a
//     failure after which the database rolled all of it back
//     (Classifier.CallerTxLost) is never run again in place;
//   - whatever is left is mapped to holdfast's typed errors (MapErr), and
//     an answer that would say "nothing happened" after an earlier
//     attempt's COMMIT went unacknowledged says ErrOutcomeUnknown instead.
func (c *Core) Run(ctx context.Context, route string, own, idempotent bool, beforeSlow func() error, attempt func(level int) error) error {
	level := 0
	r := Retrier{c: c, route: route}
	for {
		err := attempt(level)
		if err == nil || errors.Is(err, driver.ErrRollback) {
			return nil
		}
		if own && c.cls.CommitUnacknowledged(err) {
			r.Doubt = true
		}
		if errors.Is(err, driver.ErrSlowPath) && level < driver.SlowLevelMax {
			level++
			if level == 1 && beforeSlow != nil {
				err = beforeSlow()
			}
			if err == nil || errors.Is(err, driver.ErrSlowPath) {
				continue
			}
		}
		var ce *driver.CommitError
		lost := c.cls.ConnectionLost(err)
		canRetry := errors.Is(err, driver.ErrRetry) ||
			(c.cls.Retryable(err) && (own || !c.cls.CallerTxLost(err))) ||
			(own && lost && (idempotent || !errors.As(err, &ce)))
		if errors.Is(err, holdfast.ErrTxRolledBack) {
			canRetry = false // the caller's transaction is gone: never in place
		}
		if again, berr := r.Again(ctx, err, canRetry); !again {
			if berr != nil {
				err = berr
			}
			return r.Final(err, own, idempotent)
		}
	}
}

// Retrier is the retry policy's state over one operation's attempts, for
// loops that run attempts themselves (a combined batch): which failures
// run again, at most Config.RetryMax times, the jittered backoff between
// attempts, what the Observer is told, and whether any attempt's COMMIT
// went unacknowledged (Doubt) — then the attempt may have committed and,
// if the retries fail without learning the outcome, the answer must say so
// (Final), never "nothing happened".
type Retrier struct {
	c       *Core
	route   string
	attempt int
	// Doubt: an earlier attempt's COMMIT went unacknowledged.
	Doubt bool
}

// NewRetrier returns a Retrier for one operation on route.
func (c *Core) NewRetrier(route string) Retrier { return Retrier{c: c, route: route} }

// Again reports whether to run the attempt that failed with err again,
// having backed off: only when canRetry (the caller's judgement of err),
// retries are left and ctx is live. berr is the context's error when the
// backoff was cut short.
func (r *Retrier) Again(ctx context.Context, err error, canRetry bool) (again bool, berr error) {
	if !canRetry || r.attempt >= r.c.cfg.RetryMax || ctx.Err() != nil {
		return false, nil
	}
	r.attempt++
	state := r.c.cls.Code(err)
	switch {
	case state != "":
	case errors.Is(err, driver.ErrRetry):
		state = "race"
	default:
		state = "connection"
	}
	r.c.cfg.Observer.Retry(r.route, state)
	if err := Backoff(ctx, r.attempt); err != nil {
		return false, err
	}
	return true, nil
}

// Final is MapErr for the last attempt of an operation, truthful about an
// earlier attempt's unacknowledged COMMIT: a last answer that says nothing
// happened (unavailable, or the caller's context ended) is then not the
// truth, since that attempt may have committed: ErrOutcomeUnknown.
func (r *Retrier) Final(err error, own, idempotent bool) error {
	mapped := r.c.MapErr(r.route, err, own, idempotent)
	if r.Doubt && !errors.Is(mapped, holdfast.ErrOutcomeUnknown) && (errors.Is(mapped, holdfast.ErrUnavailable) ||
		errors.Is(mapped, context.Canceled) || errors.Is(mapped, context.DeadlineExceeded)) {
		return fmt.Errorf("%w: %s: an earlier attempt's commit was not acknowledged and the retries did not learn its outcome: %v", holdfast.ErrOutcomeUnknown, r.route, mapped)
	}
	return mapped
}

// Backoff waits before retry number attempt: jittered, exponential, at most
// about 128 ms, or until ctx ends.
func Backoff(ctx context.Context, attempt int) error {
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

// MapErr turns what is left of an operation after its retries into
// holdfast's typed errors: the operation's own answers pass; an
// unacknowledged COMMIT of the engine's own transaction is
// ErrOutcomeUnknown (checked before the context: "the caller gave up" must
// not read as "nothing happened"); a caller's transaction the database
// rolled back is ErrTxRolledBack; failures a later try may clear are
// ErrUnavailable.
func (c *Core) MapErr(route string, err error, own, idempotent bool) error {
	var ae *holdfast.ArgumentError
	var ie *holdfast.InsufficientStockError
	var ee *holdfast.ExpiredError
	switch {
	case errors.Is(err, holdfast.ErrTxRolledBack),
		errors.As(err, &ae), errors.As(err, &ie), errors.As(err, &ee),
		errors.Is(err, holdfast.ErrIdempotencyConflict), errors.Is(err, holdfast.ErrNotFound),
		errors.Is(err, holdfast.ErrHoldClaimed), errors.Is(err, holdfast.ErrHoldReleased),
		errors.Is(err, holdfast.ErrHoldExpired), errors.Is(err, holdfast.ErrLifetimeExceeded),
		errors.Is(err, holdfast.ErrOverCommitted),
		errors.Is(err, holdfast.ErrRevisionConflict),
		errors.Is(err, holdfast.ErrWaitlisted), errors.Is(err, holdfast.ErrWaitExpired),
		errors.Is(err, holdfast.ErrWaitCancelled), errors.Is(err, holdfast.ErrWaitUnservable),
		errors.Is(err, holdfast.ErrStockChanged):
		return err
	}
	// The cause of an unacknowledged COMMIT is kept as text only, so
	// errors.Is(err, context.Canceled) does not match and no layer above
	// turns it into a retryable answer.
	if own && c.cls.CommitUnacknowledged(err) {
		return fmt.Errorf("%w: %s: commit not acknowledged: %v", holdfast.ErrOutcomeUnknown, route, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("holdfast: %s: %w", route, err)
	}
	if !own && c.cls.CallerTxLost(err) {
		return TxRolledBack(route, err)
	}
	if m, ok := c.cls.(driver.ShopMover); ok && m.ShopMoved(err) {
		return fmt.Errorf("%w: %s: %w", holdfast.ErrShopMoved, route, err)
	}
	if c.cls.ConnectionLost(err) || c.cls.Retryable(err) || errors.Is(err, driver.ErrRetry) || c.cls.Unavailable(err) {
		return fmt.Errorf("%w: %s: %w", holdfast.ErrUnavailable, route, err)
	}
	return fmt.Errorf("holdfast: %s: %w", route, err)
}

// TxRolledBack is the answer of a …Tx call whose caller's transaction the
// database rolled back: never retried in place, where its statements would
// run outside the caller's transaction.
func TxRolledBack(route string, err error) error {
	return fmt.Errorf("%w (%w): %s: the database rolled the caller's whole transaction back; roll it back and run all of it again: %w", holdfast.ErrTxRolledBack, holdfast.ErrUnavailable, route, err)
}
