package faulttest_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
	"github.com/holdfast/holdfast/postgres/faulttest"
)

// A pool of two connections, forty clients with short deadlines and slow
// statements: most calls time out waiting for a connection or mid-
// transaction. Every error is typed and nothing is half-applied.
var _ = scenario("pool/exhausted", func(t *testing.T) {
	seed := faulttest.Seed(t)
	e := faulttest.New(t, faulttest.Options{MaxConns: 2})
	ctx := context.Background()
	var keys []holdfast.Key
	for i, s := range faulttest.Strategies {
		k := holdfast.Key{ShopID: 1, ItemID: int64(10 + i), LocationID: 1}
		e.AddKey(k, s, 40)
		keys = append(keys, k)
	}
	e.Hook.SetPauses(0.5, 10*time.Millisecond, seed)
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string]int{}
	for g := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds(4) {
				k := keys[(g+i)%len(keys)]
				co := uuid.New()
				lines := []holdfast.Line{{ItemID: k.ItemID, LocationID: 1, Quantity: 1}}
				e.Register(1, co, lines)
				octx, cancel := context.WithTimeout(ctx, time.Duration(5+(g%20)*10)*time.Millisecond)
				_, err := e.Reserve(octx, g, 1, co, lines, time.Minute)
				cancel()
				res := history.Classify(err)
				if err != nil && res == history.ResUnknown && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, holdfast.ErrUnavailable) && !errors.Is(err, holdfast.ErrOutcomeUnknown) {
					t.Errorf("unexpected error kind: %v", err)
				}
				if err == nil && g%2 == 0 {
					octx, cancel := context.WithTimeout(ctx, time.Duration(5+(g%20)*10)*time.Millisecond)
					_, err = e.Claim(octx, g, 1, co)
					cancel()
				}
				mu.Lock()
				results[res]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	e.Hook.SetPauses(0, 0, 0)
	e.Tally.Inject("pool exhausted: call ended by its deadline", results[history.ResUnknown])
	t.Logf("reserve results: %v", results)
	e.Verify(ctx)
})

var vacuumNotice = regexp.MustCompile(`(\d+) are dead but not yet removable`)

// A session idle in transaction (with a snapshot) holds back vacuum while
// pool-key churn leaves dead tuples behind: the engine keeps its guarantees,
// VACUUM cannot remove what the old snapshot might see, and once the session
// ends it can.
var _ = scenario("vacuum/idle-in-transaction", func(t *testing.T) {
	e := faulttest.New(t, faulttest.Options{Strategy: holdfast.StrategyPool})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 5, LocationID: 1}
	e.AddKey(k, holdfast.StrategyPool, 50)

	blocker, err := pgx.Connect(ctx, e.DB.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(ctx)
	tx, err := blocker.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM reservation_units").Scan(&n); err != nil {
		t.Fatal(err)
	}
	e.Tally.Inject("session idle in transaction holding back vacuum", 1)

	lines := []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 2}}
	for i := range rounds(30) {
		co := uuid.New()
		e.Register(1, co, lines)
		if _, err := e.Reserve(ctx, 0, 1, co, lines, time.Minute); err != nil {
			t.Fatalf("reserve %d: %v", i, err)
		}
		if i%2 == 0 {
			_, err = e.Release(ctx, 0, 1, co)
		} else {
			_, err = e.Claim(ctx, 0, 1, co)
		}
		if err != nil {
			t.Fatalf("end %d: %v", i, err)
		}
		if i%10 == 9 {
			if _, err := e.Adjust(ctx, 0, k, 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	vacuum := func() int {
		var mu sync.Mutex
		dead := 0
		cfg, err := pgx.ParseConfig(e.DB.URL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			if m := vacuumNotice.FindStringSubmatch(n.Message); m != nil {
				v, _ := strconv.Atoi(m[1])
				mu.Lock()
				dead += v
				mu.Unlock()
			}
		}
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "VACUUM (VERBOSE) reservation_units, holds, reserved_quantities"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return dead
	}
	held := vacuum()
	if held == 0 {
		t.Errorf("VACUUM removed every dead tuple although a snapshot older than them was open")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	after := vacuum()
	t.Logf("dead but not removable: %d while the old snapshot was open, %d after", held, after)
	if after >= held {
		t.Errorf("dead tuples not removable after the idle transaction ended: %d (was %d)", after, held)
	}
	e.Verify(ctx)
})

// lock_timeout and statement_timeout fire while another session holds the
// row a reservation or claim needs: the caller gets ErrUnavailable, nothing
// is half-applied, and the same calls succeed once the lock is gone.
var _ = scenario("timeout/lock-and-statement", func(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lock, stmt    time.Duration
		fault, sqlste string
	}{
		{"lock_timeout", 50 * time.Millisecond, 5 * time.Second, "lock_timeout fired (55P03)", "55P03"},
		{"statement_timeout", 5 * time.Second, 80 * time.Millisecond, "statement_timeout fired (57014)", "57014"},
	} {
		for _, strategy := range []holdfast.Strategy{holdfast.StrategyBatch, holdfast.StrategyCounter} {
			t.Run(tc.name+"/"+string(strategy), func(t *testing.T) {
				var retries sync.Map
				e := faulttest.New(t, faulttest.Options{RetryMax: 2, Config: func(c *holdfast.Config) {
					c.LockTimeout, c.StatementTimeout = tc.lock, tc.stmt
					c.Observer = retryCounter{&retries}
				}})
				ctx := context.Background()
				k := holdfast.Key{ShopID: 1, ItemID: 3, LocationID: 1}
				e.AddKey(k, strategy, 10)
				lines := []holdfast.Line{{ItemID: 3, LocationID: 1, Quantity: 1}}

				lock := func(sql string) pgx.Tx {
					tx, err := e.Admin.Begin(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := tx.Exec(ctx, sql); err != nil {
						t.Fatal(err)
					}
					return tx
				}
				// The counter row: a reservation's take waits on it.
				tx := lock("SELECT 1 FROM inventory_counters WHERE inventory_item_id = 3 FOR UPDATE")
				co := uuid.New()
				e.Register(1, co, lines)
				_, err := e.Reserve(ctx, 0, 1, co, lines, time.Minute)
				if !errors.Is(err, holdfast.ErrUnavailable) {
					e.Violation("reserve blocked by a row lock: %v, want ErrUnavailable", err)
				}
				if _, err := e.Checker.Hold(ctx, 1, co); !errors.Is(err, holdfast.ErrNotFound) {
					e.Violation("a timed-out reserve left a hold behind: %v", err)
				}
				if l := level(t, e, k); l.Held != 0 {
					e.Violation("a timed-out reserve left units held: %+v", l)
				}
				tx.Rollback(ctx)
				if _, err := e.Reserve(ctx, 0, 1, co, lines, time.Minute); err != nil {
					t.Fatalf("reserve after the lock is gone: %v", err)
				}

				// The level row: a claim's deduction waits on it.
				tx = lock("SELECT 1 FROM inventory_levels WHERE inventory_item_id = 3 FOR UPDATE")
				_, err = e.Claim(ctx, 0, 1, co)
				if !errors.Is(err, holdfast.ErrUnavailable) {
					e.Violation("claim blocked by a row lock: %v, want ErrUnavailable", err)
				}
				if h, err := e.Checker.Hold(ctx, 1, co); err != nil || h.Status != holdfast.StatusHeld {
					e.Violation("a timed-out claim changed the hold: %+v %v", h, err)
				}
				tx.Rollback(ctx)
				if _, err := e.Claim(ctx, 0, 1, co); err != nil {
					t.Fatalf("claim after the lock is gone: %v", err)
				}
				n := 0
				retries.Range(func(key, v any) bool {
					if key.(string) == tc.sqlste {
						n += v.(int)
					}
					return true
				})
				fired := 2 // the two calls that gave up
				if tc.sqlste == "55P03" {
					fired += n // lock timeouts are retried; statement timeouts are not
				}
				e.Tally.Inject(tc.fault, fired)
				e.Verify(ctx)
			})
		}
	}
})

// retryCounter counts the engine's retries by SQLSTATE.
type retryCounter struct{ m *sync.Map }

func (retryCounter) Op(string, string, time.Duration) {}
func (r retryCounter) Retry(_ string, state string) {
	for {
		v, _ := r.m.LoadOrStore(state, 0)
		if r.m.CompareAndSwap(state, v, v.(int)+1) {
			return
		}
	}
}
func (retryCounter) Replenished(holdfast.Key, bool, int) {}
func (retryCounter) Expired(int)                         {}
func (retryCounter) Claimed(time.Duration)               {}
