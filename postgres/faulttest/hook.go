package faulttest

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Hook is a pgx tracer (pgx.QueryTracer and pgx.BatchTracer) for the
// engine's pool: a statement-boundary hook that needs no change to the
// engine. It pauses a random fraction of statements for a random time, so
// that concurrent transactions interleave differently from run to run, and
// calls BeforeCommit right before a COMMIT is sent, where a test can
// terminate the backend. Safe for concurrent use; the zero value does
// nothing.
type Hook struct {
	mu        sync.Mutex
	rng       *rand.Rand
	pauseRate float64
	pauseMax  time.Duration

	beforeCommit    atomic.Pointer[func(ctx context.Context, conn *pgx.Conn)]
	beforeStatement atomic.Pointer[func(ctx context.Context, conn *pgx.Conn, sql string)]
	beforeBatch     atomic.Pointer[func(ctx context.Context, conn *pgx.Conn, reservations int)]

	// Statements and Pauses count what the hook saw and did.
	Statements atomic.Int64
	Pauses     atomic.Int64
	// Batches counts the combiner's transactions (pipelines that create
	// holds with postgres/sql/batch_reserve.sql) and Combined those among them that
	// served two reservations or more: the proof that a scenario exercised
	// the combiner and not only the plain path.
	Batches  atomic.Int64
	Combined atomic.Int64
}

var (
	_ pgx.QueryTracer = (*Hook)(nil)
	_ pgx.BatchTracer = (*Hook)(nil)
)

// SetPauses pauses each statement with probability rate for up to max,
// drawing from a generator seeded with seed.
func (h *Hook) SetPauses(rate float64, max time.Duration, seed uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rng = rand.New(rand.NewPCG(seed, seed^0x5eed))
	h.pauseRate, h.pauseMax = rate, max
}

// SetBeforeCommit installs fn, called right before a COMMIT is sent on conn;
// nil removes it. fn runs on the committing goroutine: blocking in it blocks
// the commit.
func (h *Hook) SetBeforeCommit(fn func(ctx context.Context, conn *pgx.Conn)) {
	if fn == nil {
		h.beforeCommit.Store(nil)
		return
	}
	h.beforeCommit.Store(&fn)
}

// SetBeforeBatchCommit installs fn, called right before the combiner sends
// the pipeline that creates a combined batch's holds and commits, with the
// number of reservations it grants; nil removes it. fn runs on the batch's
// goroutine: blocking in it holds the batch (and the counter rows it has
// locked) back, and every reservation queued meanwhile waits in the
// combiner.
func (h *Hook) SetBeforeBatchCommit(fn func(ctx context.Context, conn *pgx.Conn, reservations int)) {
	if fn == nil {
		h.beforeBatch.Store(nil)
		return
	}
	h.beforeBatch.Store(&fn)
}

// SetBeforeStatement installs fn, called before every statement (COMMIT
// included) is sent, with its SQL text; nil removes it. fn runs on the
// calling goroutine: blocking in it holds the statement back. The ctx is the
// caller's, so a test can tell its operations apart by context values.
func (h *Hook) SetBeforeStatement(fn func(ctx context.Context, conn *pgx.Conn, sql string)) {
	if fn == nil {
		h.beforeStatement.Store(nil)
		return
	}
	h.beforeStatement.Store(&fn)
}

func (h *Hook) pause() {
	h.mu.Lock()
	if h.rng == nil || h.pauseRate <= 0 || h.rng.Float64() >= h.pauseRate {
		h.mu.Unlock()
		return
	}
	d := time.Duration(h.rng.Int64N(int64(h.pauseMax) + 1))
	h.mu.Unlock()
	h.Pauses.Add(1)
	// A perturbation of the schedule, not a wait for an event.
	time.Sleep(d)
}

// isCommit reports whether sql is the COMMIT pgx sends for Tx.Commit.
func isCommit(sql string) bool {
	return len(sql) <= 8 && strings.EqualFold(strings.TrimSpace(sql), "commit")
}

// TraceQueryStart implements pgx.QueryTracer.
func (h *Hook) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	h.Statements.Add(1)
	h.pause()
	if fn := h.beforeStatement.Load(); fn != nil {
		(*fn)(ctx, conn, data.SQL)
	}
	if isCommit(data.SQL) {
		if fn := h.beforeCommit.Load(); fn != nil {
			(*fn)(ctx, conn)
		}
	}
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (h *Hook) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// batchReserveMark is how the hook recognises the combiner's statement
// (the first line of postgres/sql/batch_reserve.sql).
const batchReserveMark = "Create the holds a combined batch granted"

// TraceBatchStart implements pgx.BatchTracer. A pipeline that ends its
// transaction (the combiner sends its holds and COMMIT in one) counts as a
// commit for SetBeforeCommit, called before the pipeline is sent.
func (h *Hook) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	h.Statements.Add(1)
	h.pause()
	commit, grants := false, -1
	if data.Batch != nil {
		for _, q := range data.Batch.QueuedQueries {
			commit = commit || isCommit(q.SQL)
			if strings.Contains(q.SQL, batchReserveMark) {
				h.Batches.Add(1)
				grants = 0
				if len(q.Arguments) > 0 {
					if ids, ok := q.Arguments[0].([]string); ok {
						grants = len(ids)
					}
				}
				if grants > 1 {
					h.Combined.Add(1)
				}
			}
		}
	}
	if grants >= 0 && commit {
		if fn := h.beforeBatch.Load(); fn != nil {
			(*fn)(ctx, conn, grants)
		}
	}
	if commit {
		if fn := h.beforeCommit.Load(); fn != nil {
			(*fn)(ctx, conn)
		}
	}
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (h *Hook) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer.
func (h *Hook) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
