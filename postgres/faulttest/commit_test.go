package faulttest_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
	"github.com/holdfast/holdfast/postgres/faulttest"
)

func rounds(short int) int {
	if faulttest.Long() {
		return short * 10
	}
	return short
}

// killNextCommit terminates the backend of the next transaction to commit,
// right before COMMIT is sent, and waits until it is gone.
func killNextCommit(t *testing.T, e *faulttest.Env) *atomic.Int32 {
	var armed atomic.Int32
	e.Hook.SetBeforeCommit(func(ctx context.Context, conn *pgx.Conn) {
		if !armed.CompareAndSwap(1, 0) {
			return
		}
		var ok bool
		if err := e.Admin.QueryRow(context.Background(), "SELECT pg_terminate_backend($1, 5000)", conn.PgConn().PID()).Scan(&ok); err != nil || !ok {
			t.Errorf("terminate before commit: %v %v", ok, err)
			return
		}
		e.Tally.Inject("backend terminated before COMMIT", 1)
	})
	return &armed
}

func level(t *testing.T, e *faulttest.Env, k holdfast.Key) *holdfast.Level {
	t.Helper()
	l, err := e.Checker.Level(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The backend dies between a transaction's last statement and its COMMIT:
// nothing was committed. Idempotent operations are retried by the engine
// and succeed exactly once; an adjustment is ErrOutcomeUnknown and did not
// happen.
var _ = scenario("commit/killed-before", func(t *testing.T) {
	for _, s := range faulttest.Strategies {
		e := faulttest.New(t, faulttest.Options{Strategy: s})
		ctx := context.Background()
		k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
		e.AddKey(k, s, 1000)
		armed := killNextCommit(t, e)
		lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}
		for i := range rounds(4) {
			co := uuid.New()
			e.Register(1, co, lines)
			before := level(t, e, k)
			armed.Store(1)
			h, err := e.Reserve(ctx, 0, 1, co, lines, time.Minute)
			if err != nil || h.Replayed {
				t.Fatalf("%s round %d: reserve after a killed commit: %+v %v", s, i, h, err)
			}
			if l := level(t, e, k); l.Held != before.Held+2 {
				e.Violation("%s: held %d after one reserve of 2 from %d", s, l.Held, before.Held)
			}
			armed.Store(1)
			op := history.OpClaim
			if i%2 == 1 {
				op = history.OpRelease
			}
			if op == history.OpClaim {
				_, err = e.Claim(ctx, 0, 1, co)
			} else {
				_, err = e.Release(ctx, 0, 1, co)
			}
			if err != nil {
				t.Fatalf("%s: %s after a killed commit: %v", s, op, err)
			}
			l := level(t, e, k)
			wantAvail := before.Available
			if op == history.OpClaim {
				wantAvail -= 2
			}
			if l.Held != before.Held || l.Available != wantAvail {
				e.Violation("%s: after %s: %+v, want held %d available %d", s, op, l, before.Held, wantAvail)
			}
			// The terminated backend's FATAL (57P01) arrives as the
			// answer to COMMIT, so the engine knows nothing was committed
			// and may retry even an adjustment: it then took effect
			// exactly once. Without that knowledge it must answer
			// ErrOutcomeUnknown, and nothing happened.
			armed.Store(1)
			_, err = e.Adjust(ctx, 0, k, 5)
			l2 := level(t, e, k)
			switch {
			case err == nil:
				if l2.Available != l.Available+5 {
					e.Violation("%s: adjust +5 answered success, available %d -> %d", s, l.Available, l2.Available)
				}
			case errors.Is(err, holdfast.ErrOutcomeUnknown):
				if l2.Available != l.Available {
					e.Violation("%s: adjust killed before COMMIT changed available %d -> %d", s, l.Available, l2.Available)
				}
			default:
				e.Violation("%s: adjust with its commit killed: %v", s, err)
			}
		}
		e.Hook.SetBeforeCommit(nil)
		e.Verify(ctx)
	}
})

// The server commits and the connection is cut before the client reads the
// answer. With the engine's own retries the operation answers success
// (replayed) and took effect once; without them the client sees
// ErrOutcomeUnknown (never "unavailable": the commit may have happened)
// and its own retry with the same checkout id answers
// replayed. An adjustment answers ErrOutcomeUnknown and took effect once.
// A COMMIT's answer is lost and every retry fails too (every connection
// severed at the cut, new ones refused until the test lets them through):
// the engine retried an operation whose first attempt committed and never
// learnt the outcome, so its answer must be ErrOutcomeUnknown — never
// "unavailable" (nothing changed). Then a retry finds what happened, once.
var _ = scenario("commit/answer-lost-retries-fail", func(t *testing.T) {
	for _, s := range faulttest.Strategies {
		t.Run(string(s), func(t *testing.T) {
			e := faulttest.New(t, faulttest.Options{Strategy: s, Proxy: true, RetryMax: 2})
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			e.AddKey(k, s, 1000)
			e.Proxy.SeverOnCut.Store(true)
			e.Proxy.RefuseAfterCut.Store(true)
			lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}
			co := uuid.New()
			e.Register(1, co, lines)
			before := level(t, e, k)
			lost := func(what string, call func() (*holdfast.Hold, error)) {
				cut := e.Proxy.CutCommitted.Load()
				e.Proxy.CutNext(1)
				_, err := call()
				e.Proxy.Refusing.Store(false)
				if e.Proxy.CutCommitted.Load() != cut+1 {
					t.Fatalf("%s: the commit was not cut", what)
				}
				if !errors.Is(err, holdfast.ErrOutcomeUnknown) {
					e.Violation("%s with its answer lost and every retry failing: %v, want ErrOutcomeUnknown", what, err)
				}
				e.Tally.Inject("COMMIT answer lost, every retry failed", 1)
				h, err := call()
				if err != nil || !h.Replayed {
					e.Violation("%s retried after the outage: %+v %v, want the committed outcome, replayed", what, h, err)
				}
			}
			lost("reserve", func() (*holdfast.Hold, error) { return e.Reserve(ctx, 0, 1, co, lines, time.Minute) })
			if l := level(t, e, k); l.Held != before.Held+2 {
				e.Violation("held %d after one reserve of 2 from %d", l.Held, before.Held)
			}
			lost("claim", func() (*holdfast.Hold, error) { return e.Claim(ctx, 0, 1, co) })
			if l := level(t, e, k); l.Held != before.Held || l.Available != before.Available-2 {
				e.Violation("after the claim: %+v, want held %d available %d", l, before.Held, before.Available-2)
			}
			e.Verify(ctx)
		})
	}
})

var _ = scenario("commit/answer-lost", func(t *testing.T) {
	for _, retries := range []int{0, -1} {
		for _, s := range faulttest.Strategies {
			t.Run(fmt.Sprintf("%s/retries=%d", s, retries), func(t *testing.T) {
				e := faulttest.New(t, faulttest.Options{Strategy: s, Proxy: true, RetryMax: retries})
				ctx := context.Background()
				k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
				e.AddKey(k, s, 1000)
				lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 3}}
				for i := range rounds(3) {
					co := uuid.New()
					e.Register(1, co, lines)
					before := level(t, e, k)
					cut := e.Proxy.CutCommitted.Load()
					e.Proxy.CutNext(1)
					h, err := e.Reserve(ctx, 0, 1, co, lines, time.Minute)
					if e.Proxy.CutCommitted.Load() != cut+1 {
						t.Fatalf("round %d: the commit was not cut", i)
					}
					if retries < 0 {
						if !errors.Is(err, holdfast.ErrOutcomeUnknown) {
							e.Violation("reserve with its answer lost, no retries: %v, want ErrOutcomeUnknown", err)
						}
						h, err = e.Reserve(ctx, 0, 1, co, lines, time.Minute)
					}
					if err != nil || !h.Replayed {
						e.Violation("reserve after a lost commit answer: %+v %v, want the committed hold, replayed", h, err)
					}
					if l := level(t, e, k); l.Held != before.Held+3 {
						e.Violation("double hold? held %d after one reserve of 3 from %d", l.Held, before.Held)
					}
					op := history.OpClaim
					if i%2 == 1 {
						op = history.OpRelease
					}
					end := func() (*holdfast.Hold, error) {
						if op == history.OpClaim {
							return e.Claim(ctx, 0, 1, co)
						}
						return e.Release(ctx, 0, 1, co)
					}
					e.Proxy.CutNext(1)
					h, err = end()
					if retries < 0 {
						if !errors.Is(err, holdfast.ErrOutcomeUnknown) {
							e.Violation("%s with its answer lost, no retries: %v, want ErrOutcomeUnknown", op, err)
						}
						h, err = end()
					}
					if err != nil || !h.Replayed {
						e.Violation("%s after a lost commit answer: %+v %v, want replayed", op, h, err)
					}
					l := level(t, e, k)
					wantAvail := before.Available
					if op == history.OpClaim {
						wantAvail -= 3
					}
					if l.Held != before.Held || l.Available != wantAvail {
						e.Violation("after %s: %+v, want held %d available %d", op, l, before.Held, wantAvail)
					}
					e.Proxy.CutNext(1)
					if _, err := e.Adjust(ctx, 0, k, 5); !errors.Is(err, holdfast.ErrOutcomeUnknown) {
						e.Violation("adjust with its answer lost: %v, want ErrOutcomeUnknown", err)
					}
					if l2 := level(t, e, k); l2.Available != l.Available+5 {
						e.Violation("adjust committed once: available %d -> %d, want +5", l.Available, l2.Available)
					}
				}
				e.Tally.Inject("COMMIT answer lost (server committed)", int(e.Proxy.CutCommitted.Load()))
				e.Verify(ctx)
			})
		}
	}
})
