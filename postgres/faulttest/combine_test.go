package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/faulttest"
)

// The combiner under faults. Combined batches form only when several
// one-line reservations on batch keys are in flight in one process, so
// each round below holds the first batch at its commit (Hook's
// SetBeforeBatchCommit) while more reservations arrive: they queue in the
// combiner and the next batch serves several of them at once.

// combinerRounds bounds the rounds a scenario runs to hit the combined
// batches it needs.
const combinerRounds = 40

// combined drives rounds of n concurrent one-line reservations of 1 unit
// on key k until fault has been applied to hits combined batches (of 2+
// reservations) or combinerRounds ran. fault runs on the batch's goroutine
// right before its holds and COMMIT are sent. It returns the checkouts
// and each call's error.
func combined(t *testing.T, e *faulttest.Env, k holdfast.Key, n, hits int,
	fault func(ctx context.Context, conn *pgx.Conn)) (map[uuid.UUID]error, int) {
	t.Helper()
	ctx := context.Background()
	lines := []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}
	answers := map[uuid.UUID]error{}
	var mu sync.Mutex
	hit := 0
	for round := 0; round < combinerRounds && hit < hits; round++ {
		gate := make(chan struct{})
		var gated, armed atomic.Bool
		armed.Store(true)
		reached := make(chan struct{}, 1)
		e.Hook.SetBeforeBatchCommit(func(ctx context.Context, conn *pgx.Conn, grants int) {
			if gated.CompareAndSwap(false, true) {
				reached <- struct{}{}
				<-gate
				return
			}
			if grants >= 2 && armed.CompareAndSwap(true, false) {
				fault(ctx, conn)
				mu.Lock()
				hit++
				mu.Unlock()
			}
		})
		var wg sync.WaitGroup
		reserve := func() {
			defer wg.Done()
			co := uuid.New()
			e.Register(k.ShopID, co, lines)
			_, err := e.Reserve(ctx, 0, k.ShopID, co, lines, 10*time.Minute)
			mu.Lock()
			answers[co] = err
			mu.Unlock()
		}
		// Pairs until one batch waits at its commit (a lone reservation
		// takes the plain path)...
		for range 20 {
			wg.Add(2)
			go reserve()
			go reserve()
			select {
			case <-reached:
			case <-waitGroupDone(&wg):
				continue
			}
			break
		}
		if !gated.Load() {
			close(gate)
			wg.Wait()
			continue
		}
		// ...then n more, which queue behind it.
		for range n {
			wg.Add(1)
			go reserve()
		}
		waitLockWaiter(t, e)
		close(gate)
		wg.Wait()
		e.Hook.SetBeforeBatchCommit(nil)
	}
	e.Hook.SetBeforeBatchCommit(nil)
	if hit < hits {
		t.Fatalf("only %d of %d combined batches hit in %d rounds: the combiner did not combine", hit, hits, combinerRounds)
	}
	return answers, hit
}

func waitGroupDone(wg *sync.WaitGroup) <-chan struct{} {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	return c
}

// waitLockWaiter waits (bounded, not a verdict) until a backend of the
// engine waits for a lock: the second batch runner queued behind the held
// batch's counter row, the rest of the requests in the combiner's queue.
func waitLockWaiter(t *testing.T, e *faulttest.Env) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := e.Admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(2 * time.Millisecond) // polling for an event, bounded above
	}
}

// checkAnswers checks what each caller was told against the database:
// success means a held hold; "unavailable" from a batch that did not
// commit means no hold; every error typed.
func checkAnswers(t *testing.T, e *faulttest.Env, k holdfast.Key, answers map[uuid.UUID]error, committed bool) (holds int) {
	t.Helper()
	ctx := context.Background()
	for co, err := range answers {
		h, herr := e.Checker.Hold(ctx, k.ShopID, co)
		switch {
		case err == nil:
			if herr != nil || h.Status != holdfast.StatusHeld {
				e.Violation("reserve %v answered success; the database says %+v %v", co, h, herr)
			}
		case errors.Is(err, holdfast.ErrOutcomeUnknown):
			// Truthful whatever the database says: a failed batch's
			// requests run again on the plain path, whose own COMMIT
			// answer may be lost too.
		case errors.Is(err, holdfast.ErrUnavailable):
			// "Nothing changed": a hold in the database makes it a lie.
			if herr == nil {
				e.Violation("reserve %v answered %v (nothing changed) but the database has its hold %+v (batch committed: %v)", co, err, h, committed)
			}
		default:
			e.Violation("reserve %v in a combined batch: %v", co, err)
		}
		if herr == nil {
			holds++
		}
	}
	if l := level(t, e, k); l.Held != holds {
		e.Violation("held %d units for %d holds of 1 unit: a hold created twice or not at all", l.Held, holds)
	}
	return holds
}

// A combined batch's backend is terminated, or its connection cut, right
// before its holds and COMMIT are sent: nothing of it committed. With the
// engine's retries every caller still gets its hold, exactly once; without
// them the batch's requests still run again on the plain path, so each
// caller gets its hold or a truthful failure (never "unavailable" with a
// hold in the database).
var _ = scenario("combine/killed-and-cut", func(t *testing.T) {
	for _, mode := range []string{"killed", "cut"} {
		for _, retries := range []int{0, -1} {
			t.Run(fmt.Sprintf("%s/retries=%d", mode, retries), func(t *testing.T) {
				e := faulttest.New(t, faulttest.Options{Proxy: mode == "cut", RetryMax: retries, MaxConns: 12})
				k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
				e.AddKey(k, holdfast.StrategyBatch, 1000)
				fault := func(ctx context.Context, conn *pgx.Conn) {
					if mode == "cut" {
						e.Proxy.SeverAll()
						e.Tally.Inject("connection cut before a combined batch's COMMIT", 1)
						return
					}
					var ok bool
					if err := e.Admin.QueryRow(context.Background(), "SELECT pg_terminate_backend($1, 5000)", conn.PgConn().PID()).Scan(&ok); err != nil || !ok {
						t.Errorf("terminate: %v %v", ok, err)
					}
					e.Tally.Inject("backend terminated before a combined batch's COMMIT", 1)
				}
				answers, _ := combined(t, e, k, 6, 2, fault)
				failed := 0
				for _, err := range answers {
					if err != nil {
						failed++
					}
				}
				if retries == 0 && failed > 0 {
					e.Violation("%d of %d reservations failed although the engine retries a batch that did not commit", failed, len(answers))
				}
				// Without retries a faulted batch still sends its requests
				// to the plain path (issue #10 item 2: one failure fails
				// no one), so any mix of holds and typed failures is
				// right; checkAnswers holds each to the truth.
				t.Logf("retries=%d: %d of %d reservations failed", retries, failed, len(answers))
				checkAnswers(t, e, k, answers, false)
				e.Verify(context.Background())
			})
		}
	}
})

// The server commits a combined batch and its answer is lost (the proxy
// drops the connection after the server's COMMIT). With retries the
// engine re-runs the batch, which skips the holds that exist, and their
// callers find them on the plain path (Replayed): each hold exactly once.
// Without retries a caller whose plain-path retry fails too is told the
// outcome is unknown (never "unavailable": its hold exists), and a retry
// with the same checkout id returns it.
var _ = scenario("combine/answer-lost", func(t *testing.T) {
	for _, retries := range []int{0, -1} {
		t.Run(fmt.Sprintf("retries=%d", retries), func(t *testing.T) {
			e := faulttest.New(t, faulttest.Options{Proxy: true, RetryMax: retries, MaxConns: 12})
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			e.AddKey(k, holdfast.StrategyBatch, 1000)
			before := e.Proxy.CutCommitted.Load()
			answers, hits := combined(t, e, k, 6, 2, func(_ context.Context, conn *pgx.Conn) {
				e.Proxy.CutBackend(conn.PgConn().PID())
			})
			cut := int(e.Proxy.CutCommitted.Load() - before)
			e.Tally.Inject("COMMIT answer lost after a combined batch committed", cut)
			if cut != hits {
				t.Fatalf("%d combined batches armed, %d commit answers cut", hits, cut)
			}
			lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
			unknown := 0
			for co, err := range answers {
				if err == nil {
					continue
				}
				if retries == 0 {
					e.Violation("reserve %v failed although the engine retries: %v", co, err)
					continue
				}
				// Its hold may exist: "unavailable" (nothing changed)
				// would be a lie.
				if !errors.Is(err, holdfast.ErrOutcomeUnknown) {
					e.Violation("reserve %v with its batch's answer lost: %v, want its hold or outcome unknown", co, err)
				}
				unknown++
				h, err := e.Reserve(ctx, 0, 1, co, lines, 10*time.Minute)
				if err != nil || !h.Replayed {
					e.Violation("retry of %v after a lost batch answer: %+v %v, want its committed hold, replayed", co, h, err)
				}
				answers[co] = nil
			}
			// A lost batch answer sends its requests to the plain path,
			// which finds their committed holds (replayed): callers may
			// learn their hold rather than "unknown". Either is truthful.
			t.Logf("retries=%d: %d callers answered unknown after %d lost batch answers", retries, unknown, hits)
			checkAnswers(t, e, k, answers, true)
			e.Verify(ctx)
		})
	}
})

// The server commits a combined batch and the connection drops before the
// client reads any of the pipeline's answers (the holds' rows too, not only
// the COMMIT's): finding 8 of docs/FAULTS.md. The engine must treat that
// as a possible commit — each caller gets its hold (the plain path finds
// it) or ErrOutcomeUnknown, never "unavailable" with a hold in the
// database.
//
// "severed": every other connection is cut at the same moment, so the
// plain path's attempt on a pooled connection fails too (the ci run that
// found it); without retries its callers must then be told the outcome
// is unknown.
var _ = scenario("combine/pipeline-lost", func(t *testing.T) {
	for _, c := range []struct {
		severed bool
		retries int
	}{{false, 0}, {false, -1}, {true, 0}, {true, -1}} {
		retries := c.retries
		t.Run(fmt.Sprintf("severed=%v/retries=%d", c.severed, retries), func(t *testing.T) {
			e := faulttest.New(t, faulttest.Options{Proxy: true, RetryMax: retries, MaxConns: 12})
			e.Proxy.SeverOnCut.Store(c.severed)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			e.AddKey(k, holdfast.StrategyBatch, 1000)
			before := e.Proxy.CutCommitted.Load()
			answers, hits := combined(t, e, k, 6, 2, func(_ context.Context, conn *pgx.Conn) {
				e.Proxy.CutBackendPipeline(conn.PgConn().PID())
			})
			cut := int(e.Proxy.CutCommitted.Load() - before)
			e.Tally.Inject("a combined batch's whole answer lost after it committed", cut)
			if cut != hits {
				t.Fatalf("%d combined batches armed, %d pipelines cut", hits, cut)
			}
			lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
			unknown := 0
			for co, err := range answers {
				if err == nil || !errors.Is(err, holdfast.ErrOutcomeUnknown) {
					// Success, or a failure that checkAnswers holds to
					// the truth: "unavailable" only without a hold (with
					// every connection severed, a request of another
					// batch or of the plain path can fail before it
					// committed anything).
					continue
				}
				unknown++
				if _, herr := e.Checker.Hold(ctx, k.ShopID, co); herr != nil {
					continue // not committed: a retry would reserve afresh
				}
				h, err := e.Reserve(ctx, 0, 1, co, lines, 10*time.Minute)
				if err != nil || !h.Replayed {
					e.Violation("retry of %v after a lost batch answer: %+v %v, want its committed hold, replayed", co, h, err)
				}
				answers[co] = nil
			}
			// Every request of a cut batch has its hold (the batch
			// committed): checkAnswers flags any of them told
			// "unavailable".
			t.Logf("retries=%d: %d callers answered unknown after %d lost batch pipelines", retries, unknown, hits)
			checkAnswers(t, e, k, answers, true)
			e.Verify(ctx)
		})
	}
})

// A caller gives up while its reservation waits in the combiner's queue.
// It is told nothing happened (its context's error, or "unavailable"), so
// nothing may happen: the batch must drop it, or answer it truthfully
// (outcome unknown) if its batch had started (issue #10 item 2).
var _ = scenario("combine/cancelled-while-queued", func(t *testing.T) {
	e := faulttest.New(t, faulttest.Options{MaxConns: 12})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.AddKey(k, holdfast.StrategyBatch, 1000)
	lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
	cancelled := queueBehindHeldBatch(t, e, k, func(co uuid.UUID) error {
		// Gone before it is even queued: every batch forms after it left.
		gone, cancel := context.WithCancel(ctx)
		cancel()
		_, err := e.Reserve(gone, 0, 1, co, lines, 10*time.Minute)
		return err
	})
	e.Tally.Inject("caller cancelled while queued in the combiner", len(cancelled))
	e.Quiesce(ctx)
	for co, err := range cancelled {
		h, herr := e.Checker.Hold(ctx, 1, co)
		switch {
		case err == nil:
			e.Violation("a reservation whose caller had already gone answered success: %+v", h)
		case errors.Is(err, holdfast.ErrOutcomeUnknown):
			// Truthful whatever happened.
		case herr == nil:
			e.Violation("caller of %v was told %v (nothing happened), but its hold was committed: %s, expires %v",
				co, err, h.Status, h.ExpiresAt)
		}
	}
	e.Verify(ctx)
})

// queueBehindHeldBatch holds a combined batch at its commit, then runs
// call for 6 new checkouts (they queue in the combiner), then lets the
// batch go. It returns each call's error.
func queueBehindHeldBatch(t *testing.T, e *faulttest.Env, k holdfast.Key, call func(co uuid.UUID) error) map[uuid.UUID]error {
	t.Helper()
	ctx := context.Background()
	lines := []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}
	gate := make(chan struct{})
	reached := make(chan struct{}, 1)
	var gated atomic.Bool
	e.Hook.SetBeforeBatchCommit(func(context.Context, *pgx.Conn, int) {
		if gated.CompareAndSwap(false, true) {
			reached <- struct{}{}
			<-gate
		}
	})
	defer e.Hook.SetBeforeBatchCommit(nil)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(2)
		for range 2 {
			go func() {
				defer wg.Done()
				co := uuid.New()
				e.Register(1, co, lines)
				if _, err := e.Reserve(ctx, 0, 1, co, lines, 10*time.Minute); err != nil {
					t.Errorf("reserve: %v", err)
				}
			}()
		}
		select {
		case <-reached:
		case <-waitGroupDone(&wg):
			continue
		}
		break
	}
	if !gated.Load() {
		t.Fatal("no combined batch formed in 50 pairs of concurrent reservations")
	}
	out := map[uuid.UUID]error{}
	for range 6 {
		co := uuid.New()
		e.Register(1, co, lines)
		out[co] = call(co)
	}
	close(gate)
	wg.Wait()
	return out
}

// A release races a reservation of the same checkout that waits in the
// combiner (its batch held at its commit): the release finds no hold
// (not found) and the reservation then creates it — both answers true at
// their moments; the hold is held and claimable. Checked by the history
// model too.
var _ = scenario("combine/release-races-pending", func(t *testing.T) {
	e := faulttest.New(t, faulttest.Options{History: true, MaxConns: 12})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.AddKey(k, holdfast.StrategyBatch, 1000)
	lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
	type answer struct {
		rel error
		res chan error
	}
	raced := map[uuid.UUID]*answer{}
	var mu sync.Mutex
	queueBehindHeldBatch(t, e, k, func(co uuid.UUID) error {
		a := &answer{res: make(chan error, 1)}
		go func() {
			_, err := e.Reserve(ctx, 1, 1, co, lines, 10*time.Minute)
			a.res <- err
		}()
		_, a.rel = e.Release(ctx, 2, 1, co)
		mu.Lock()
		raced[co] = a
		mu.Unlock()
		return nil
	})
	e.Tally.Inject("release racing a pending combined reservation", len(raced))
	for co, a := range raced {
		rerr := <-a.res
		h, herr := e.Checker.Hold(ctx, 1, co)
		switch {
		case rerr != nil:
			e.Violation("reserve racing a release: %v", rerr)
		case a.rel == nil:
			// The release came after the batch committed.
			if herr != nil || h.Status != holdfast.StatusReleased {
				e.Violation("release of %v answered success; the hold is %+v %v", co, h, herr)
			}
		case errors.Is(a.rel, holdfast.ErrNotFound):
			if herr != nil || h.Status != holdfast.StatusHeld {
				e.Violation("release of %v found nothing, reserve succeeded; the hold is %+v %v, want held", co, h, herr)
			}
		default:
			e.Violation("release racing a pending reservation: %v", a.rel)
		}
	}
	e.Verify(ctx)
})
