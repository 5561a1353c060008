package mysql_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// answer is what a caller was told about one checkout.
type answer struct {
	id       uuid.UUID
	reserved error // the Reserve's answer
	claimed  *error
}

// faultLoad reserves and claims from several goroutines until stop is
// closed, and returns every answer.
func faultLoad(t *testing.T, e *env, stop <-chan struct{}) []answer {
	var mu sync.Mutex
	var out []answer
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a := answer{id: uuid.New()}
				_, a.reserved = e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: a.id,
					Lines: []holdfast.Line{{ItemID: int64(1 + (w+i)%2), LocationID: 1, Quantity: 1}}})
				if a.reserved == nil && i%2 == 0 {
					_, err := e.c.Claim(ctx, 1, a.id)
					a.claimed = &err
				}
				mu.Lock()
				out = append(out, a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// checkAnswers verifies that every answer was the truth: an acknowledged
// hold exists, a claim acknowledged is claimed, "sold out" and
// ErrUnavailable changed nothing, and only ErrOutcomeUnknown stands for
// "unknown". It returns how many answers were ErrUnavailable or
// ErrOutcomeUnknown.
func checkAnswers(t *testing.T, e *env, answers []answer) (unavailable int) {
	t.Helper()
	ctx := context.Background()
	for _, a := range answers {
		h, err := e.c.Hold(ctx, 1, a.id)
		switch {
		case a.reserved == nil:
			if err != nil {
				t.Errorf("%s: reserve acknowledged, hold: %v", a.id, err)
				continue
			}
			if a.claimed != nil && *a.claimed == nil && h.Status != holdfast.StatusClaimed {
				t.Errorf("%s: claim acknowledged, status %s", a.id, h.Status)
			}
			switch {
			case a.claimed == nil || *a.claimed == nil, errors.Is(*a.claimed, holdfast.ErrOutcomeUnknown):
			case errors.Is(*a.claimed, holdfast.ErrUnavailable):
				// "Nothing changed": the clock stands still, so the hold
				// is still held.
				if h.Status != holdfast.StatusHeld {
					t.Errorf("%s: claim answered %v, but the hold is %s", a.id, *a.claimed, h.Status)
				}
			default:
				t.Errorf("%s: claim answered %v", a.id, *a.claimed)
			}
		case errors.Is(a.reserved, holdfast.ErrInsufficientStock):
			if !errors.Is(err, holdfast.ErrNotFound) {
				t.Errorf("%s: answered sold out, but hold %+v %v", a.id, h, err)
			}
		case errors.Is(a.reserved, holdfast.ErrUnavailable):
			// "Nothing changed": ErrOutcomeUnknown is the answer when a
			// COMMIT went unacknowledged.
			unavailable++
			if !errors.Is(err, holdfast.ErrNotFound) {
				t.Errorf("%s: answered %v, but hold %+v %v", a.id, a.reserved, h, err)
			}
		case errors.Is(a.reserved, holdfast.ErrOutcomeUnknown):
			unavailable++
		default:
			t.Errorf("%s: reserve answered %v", a.id, a.reserved)
		}
		if a.claimed != nil && *a.claimed != nil && (errors.Is(*a.claimed, holdfast.ErrUnavailable) || errors.Is(*a.claimed, holdfast.ErrOutcomeUnknown)) {
			unavailable++
		}
	}
	return unavailable
}

// TestKilledConnections kills the engine's connections (KILL CONNECTION)
// again and again under load. Every answer must be the truth, and the
// invariant holds.
func TestKilledConnections(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8, holdfast.Config{})
	for item := int64(1); item <= 2; item++ {
		k := holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}
		e.stock(k, 400)
		e.strategy(k, []holdfast.Strategy{holdfast.StrategyPool, holdfast.StrategyCounter}[item-1], 50)
	}
	admin := e.db.Open(t, 1)
	stop := make(chan struct{})
	var killed atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for killed.Load() < 60 {
			rows, err := admin.Query("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", e.db.Name)
			if err != nil {
				t.Error(err)
				return
			}
			var ids []int64
			for rows.Next() {
				var id int64
				if rows.Scan(&id) == nil {
					ids = append(ids, id)
				}
			}
			rows.Close()
			for _, id := range ids[:min(len(ids), 2)] {
				if _, err := admin.Exec("KILL CONNECTION ?", id); err == nil {
					killed.Add(1)
				}
			}
		}
	}()
	go func() { <-done; close(stop) }()
	answers := faultLoad(t, e, stop)
	unavailable := checkAnswers(t, e, answers)
	t.Logf("%d answers, %d connections killed, %d answered unavailable", len(answers), killed.Load(), unavailable)
	e.checkInvariant()
}

// TestServerCrash crashes the private server (SIGKILL) under load and
// restarts it. Not parallel: every test's connections die with it.
func TestServerCrash(t *testing.T) {
	cl := mysqltest.Cluster()
	if cl == nil {
		t.Skip("TEST_MYSQL_URL: no private server to crash")
	}
	e := newEnv(t, 8, holdfast.Config{})
	for item := int64(1); item <= 2; item++ {
		k := holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}
		e.stock(k, 300)
		e.strategy(k, []holdfast.Strategy{holdfast.StrategyPool, holdfast.StrategyBatch}[item-1], 50)
	}
	stop := make(chan struct{})
	var answers []answer
	loaded := make(chan struct{})
	go func() { answers = faultLoad(t, e, stop); close(loaded) }()
	// Crash once some work is acknowledged (polled, with a generous bound).
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		l := e.level(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1})
		if l.Held+(300-l.Available) >= 20 {
			break
		}
	}
	if err := cl.Restart(context.Background(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Work on after the restart, then stop.
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
		l := e.level(holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1})
		if l.Held+(300-l.Available) >= 60 || l.Sellable == 0 {
			break
		}
	}
	close(stop)
	<-loaded
	unavailable := checkAnswers(t, e, answers)
	t.Logf("%d answers across a crash, %d answered unavailable", len(answers), unavailable)
	e.checkInvariant()
}
