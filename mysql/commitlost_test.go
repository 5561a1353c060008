package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// proxied is a client whose connections pass through a fault proxy, next to
// the env's direct client, which the checks use (their own COMMITs must not
// meet the proxy).
type proxied struct {
	*env
	p  *mysqltest.Proxy
	pc *mysql.Client
}

func newProxied(t *testing.T, retryMax int) *proxied {
	t.Helper()
	e := newEnv(t, 8, holdfast.Config{})
	p := mysqltest.StartProxy(t, e.db.Config.Addr)
	cfg := e.db.Config.Clone()
	cfg.Addr = p.Addr()
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	t.Cleanup(func() { db.Close() })
	pc, err := mysql.New(db, holdfast.Config{Now: e.clock.Now, RetryMax: retryMax})
	if err != nil {
		t.Fatal(err)
	}
	return &proxied{env: e, p: p, pc: pc}
}

// cut arms the proxy for one COMMIT, runs op, and fails the test unless the
// server committed and the answer was swallowed.
func (x *proxied) cut(what string, op func() error) error {
	x.t.Helper()
	before := x.p.Committed.Load()
	x.p.CutNext(1)
	err := op()
	if x.p.Committed.Load() != before+1 {
		x.t.Fatalf("%s: the COMMIT answer was not cut (committed %d -> %d)", what, before, x.p.Committed.Load())
	}
	return err
}

// TestCommitAnswerLost: the server commits and the connection dies before
// the engine reads the answer (a fault proxy swallows it). With the
// engine's own retries the operation answers its replay and took effect
// once; without retries the caller is told ErrOutcomeUnknown — never
// ErrUnavailable, "nothing changed" — the effect is in the database, and
// the caller's retry with the same checkout id / change ID replays it. A
// stock change without an ID answers ErrOutcomeUnknown and took effect
// once.
func TestCommitAnswerLost(t *testing.T) {
	t.Parallel()
	for _, retries := range []int{0, -1} {
		for _, s := range strategies {
			t.Run(fmt.Sprintf("%s/retries=%d", s, retries), func(t *testing.T) {
				t.Parallel()
				x := newProxied(t, retries)
				ctx := context.Background()
				k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
				x.stock(k, 1000)
				x.strategy(k, s, 50)
				lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 3}}
				unknown := func(what string, err error) {
					t.Helper()
					if retries < 0 && !errors.Is(err, holdfast.ErrOutcomeUnknown) {
						t.Errorf("%s with its COMMIT answer lost, no retries: %v, want ErrOutcomeUnknown", what, err)
					}
				}
				for i := range 4 {
					co := uuid.New()
					before := x.level(k)
					p := holdfast.ReserveParams{ShopID: 1, CheckoutID: co, Lines: lines}
					var h *holdfast.Hold
					err := x.cut("reserve", func() (err error) { h, err = x.pc.Reserve(ctx, p); return err })
					unknown("reserve", err)
					if l := x.level(k); l.Held != before.Held+3 {
						t.Errorf("round %d: held %d after a reserve of 3 with its answer lost, from %d: the commit is not visible", i, l.Held, before.Held)
					}
					if retries < 0 {
						h, err = x.pc.Reserve(ctx, p)
					}
					if err != nil || !h.Replayed {
						t.Errorf("round %d: reserve after a lost COMMIT answer: %+v %v, want the committed hold, replayed", i, h, err)
					}
					if l := x.level(k); l.Held != before.Held+3 {
						t.Errorf("round %d: held %d after one reserve of 3 from %d: held twice?", i, l.Held, before.Held)
					}

					op := "claim"
					end := func() (*holdfast.Hold, error) { return x.pc.Claim(ctx, 1, co) }
					if i%2 == 1 {
						op = "release"
						end = func() (*holdfast.Hold, error) { return x.pc.Release(ctx, 1, co) }
					}
					err = x.cut(op, func() (err error) { h, err = end(); return err })
					unknown(op, err)
					wantAvail := before.Available
					if op == "claim" {
						wantAvail -= 3
					}
					if l := x.level(k); l.Held != before.Held || l.Available != wantAvail {
						t.Errorf("round %d: after %s with its answer lost: %+v, want held %d available %d", i, op, l, before.Held, wantAvail)
					}
					if retries < 0 {
						h, err = end()
					}
					if err != nil || !h.Replayed {
						t.Errorf("round %d: %s after a lost COMMIT answer: %+v %v, want replayed", i, op, h, err)
					}

					l := x.level(k)
					id := fmt.Sprintf("restock-%d", i)
					change := holdfast.StockChange{Key: k, Delta: 5, Reason: "restock", ID: id}
					var got *holdfast.Level
					err = x.cut("stock change", func() (err error) { got, err = x.pc.ChangeStock(ctx, change); return err })
					unknown("stock change with an ID", err)
					if l2 := x.level(k); l2.Available != l.Available+5 {
						t.Errorf("round %d: stock change +5 with its answer lost: available %d -> %d", i, l.Available, l2.Available)
					}
					if retries < 0 {
						got, err = x.pc.ChangeStock(ctx, change)
					}
					if err != nil || got.Available != l.Available+5 {
						t.Errorf("round %d: stock change %s after a lost COMMIT answer: %+v %v, want its first outcome, available %d", i, id, got, err, l.Available+5)
					}
					if l2 := x.level(k); l2.Available != l.Available+5 {
						t.Errorf("round %d: stock change %s replayed: available %d -> %d, want +5 once", i, id, l.Available, l2.Available)
					}

					// Without an ID it cannot be retried: unknown, applied once.
					err = x.cut("stock change without ID", func() error {
						_, err := x.pc.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 2, Reason: "restock"})
						return err
					})
					if !errors.Is(err, holdfast.ErrOutcomeUnknown) {
						t.Errorf("round %d: stock change without an ID, answer lost: %v, want ErrOutcomeUnknown", i, err)
					}
					if l3 := x.level(k); l3.Available != l.Available+7 {
						t.Errorf("round %d: stock change +2 without an ID: available %d, want %d", i, l3.Available, l.Available+7)
					}
				}
				x.checkInvariant()
			})
		}
	}
}

// TestCommitAnswerLostCombined cuts the COMMIT answer of a combined batch
// (its transaction is the one that ran batch_existing.sql) while plain
// reservations commit alongside it. No caller may be told "nothing
// changed" (ErrUnavailable, sold out) while its hold exists: each is
// answered its hold (the plain path finds it, replayed), or
// ErrOutcomeUnknown and then its hold on a retry with the same checkout
// id. Every hold is held once.
func TestCommitAnswerLostCombined(t *testing.T) {
	t.Parallel()
	for _, retries := range []int{0, -1} {
		t.Run(fmt.Sprintf("retries=%d", retries), func(t *testing.T) {
			t.Parallel()
			x := newProxied(t, retries)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			x.stock(k, 10_000)
			x.strategy(k, holdfast.StrategyBatch, 50)
			const marker = "STRAIGHT_JOIN holds h ON h.shop_id = g.shop"
			var ids []uuid.UUID
			unknowns := 0
			for round := 0; x.p.Committed.Load() == 0; round++ {
				if round == 50 {
					t.Fatal("50 rounds of 16 concurrent reservations, and no combined batch committed through the proxy")
				}
				if round == 0 {
					x.p.CutAfter(marker) // one cut, whichever round's batch meets it
				}
				var wg sync.WaitGroup
				errs := make([]error, 16)
				holds := make([]*holdfast.Hold, 16)
				cos := make([]uuid.UUID, 16)
				for i := range cos {
					cos[i] = uuid.New()
					wg.Add(1)
					go func() {
						defer wg.Done()
						holds[i], errs[i] = x.pc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: cos[i],
							Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
					}()
				}
				wg.Wait()
				for i, co := range cos {
					ids = append(ids, co)
					h, err := x.c.Hold(ctx, 1, co)
					switch {
					case errs[i] == nil:
						if err != nil {
							t.Errorf("%s: reserve acknowledged, hold: %v", co, err)
						}
					case errors.Is(errs[i], holdfast.ErrOutcomeUnknown):
						unknowns++
						// The caller's retry answers the outcome.
						r, rerr := x.pc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: co,
							Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
						if rerr != nil || (err == nil && !r.Replayed) {
							t.Errorf("%s: retry after ErrOutcomeUnknown: %+v %v (hold before: %v)", co, r, rerr, err)
						}
					case err == nil:
						t.Errorf("%s: answered %v, but its hold exists: %+v", co, errs[i], h)
					default:
						t.Errorf("%s: answered %v", co, errs[i])
					}
				}
			}
			// A lost batch answer sends its requests to the plain path (the
			// engine's combiner, as on PostgreSQL), which finds their
			// committed holds (replayed): callers may learn their hold
			// rather than "unknown". Either is truthful; "nothing changed"
			// is not, and is refused above.
			if l := x.level(k); l.Held != len(ids) {
				t.Errorf("held %d after %d one-unit reservations, each answered or retried to its hold", l.Held, len(ids))
			}
			t.Logf("%d reservations, %d answered ErrOutcomeUnknown, %d COMMIT answers cut", len(ids), unknowns, x.p.Committed.Load())
			x.checkInvariant()
		})
	}
}

// TestCommitAnswerLostRetriesFail: the COMMIT answer is lost and then the
// server cannot be reached for the engine's retries. The last attempt's
// error says "connection failed" — ErrUnavailable would tell the caller
// nothing changed — but the first attempt committed: the answer must be
// ErrOutcomeUnknown, and once the server is back a retry with the same
// checkout id replays.
func TestCommitAnswerLostRetriesFail(t *testing.T) {
	t.Parallel()
	x := newProxied(t, 2)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	x.stock(k, 100)
	x.strategy(k, holdfast.StrategyCounter, 0)
	p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}}
	x.p.RefuseAfterCut()
	err := x.cut("reserve", func() error { _, err := x.pc.Reserve(ctx, p); return err })
	if !errors.Is(err, holdfast.ErrOutcomeUnknown) {
		t.Errorf("reserve: COMMIT answer lost, then its retries could not connect: %v, want ErrOutcomeUnknown", err)
	}
	x.p.Refuse(false)
	if l := x.level(k); l.Held != 2 {
		t.Errorf("held %d, want the committed 2", l.Held)
	}
	h, err := x.pc.Reserve(ctx, p)
	if err != nil || !h.Replayed {
		t.Errorf("retry once the server is back: %+v %v, want replayed", h, err)
	}
	x.checkInvariant()
}

// TestCombinedCallerLeaves: callers leave (their contexts are cancelled)
// while the combined batch that took their requests is committing — the
// proxy holds the batch's COMMIT back until they have all answered. A
// caller whose request a batch took may get its hold, so it must be told
// ErrOutcomeUnknown, never a bare "context canceled"; a caller told
// anything else must have no hold once the batch has committed. Each
// caller's retry with the same checkout id answers its hold.
func TestCombinedCallerLeaves(t *testing.T) {
	t.Parallel()
	x := newProxied(t, 0)
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	x.stock(k, 10_000)
	x.strategy(k, holdfast.StrategyBatch, 50)
	const marker = "STRAIGHT_JOIN holds h ON h.shop_id = g.shop"
	stalled, release := x.p.StallAfter(marker)
	defer release()
	line := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
	var ids []uuid.UUID
	var errs []error
	for round := 0; ; round++ {
		if round == 50 {
			t.Fatal("50 rounds of 16 concurrent reservations, and no combined batch reached its COMMIT")
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		cos := make([]uuid.UUID, 16)
		res := make([]error, 16)
		for i := range cos {
			cos[i] = uuid.New()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, res[i] = x.pc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: cos[i], Lines: line})
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		hit := false
		select {
		case <-stalled:
			hit = true
		case <-done:
		}
		cancel()
		<-done
		ids, errs = append(ids, cos...), append(errs, res...)
		if hit {
			break
		}
	}
	release()
	ctx := context.Background()
	unknown := 0
	for i, co := range ids {
		if errs[i] == nil {
			continue
		}
		if errors.Is(errs[i], holdfast.ErrOutcomeUnknown) {
			unknown++
			// Answered by a retry, once the batch has committed.
			h, err := x.pc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: co, Lines: line})
			if err != nil {
				t.Errorf("%s: retry after ErrOutcomeUnknown: %+v %v", co, h, err)
			}
			continue
		}
		if !errors.Is(errs[i], context.Canceled) {
			t.Errorf("%s: answered %v", co, errs[i])
		}
	}
	if unknown == 0 {
		t.Error("a combined batch held at its COMMIT while its callers left, and none was told ErrOutcomeUnknown")
	}
	// Every retry above ran after the batch committed (its requests'
	// retries find their holds on the plain path, which waits for the
	// batch's counter row); a caller told "context canceled" has no hold.
	for i, co := range ids {
		if errs[i] == nil || errors.Is(errs[i], holdfast.ErrOutcomeUnknown) {
			continue
		}
		if h, err := x.c.Hold(ctx, 1, co); !errors.Is(err, holdfast.ErrNotFound) {
			t.Errorf("%s: answered %v, but hold %+v %v", co, errs[i], h, err)
		}
	}
	t.Logf("%d reservations, %d answered ErrOutcomeUnknown", len(ids), unknown)
	x.checkInvariant()
}
