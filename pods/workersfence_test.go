package pods_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mymove"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/postgres/pgmove"
)

// workerEngine is an engine with its maintenance passes, as both drivers'
// clients have them.
type workerEngine interface {
	holdfast.Engine
	SweepOnce(context.Context) (int, error)
	SequenceEvents(context.Context) (int, error)
	ServeWaitlist(context.Context) (int, error)
	Replenish(context.Context) (int, error)
	PurgeOnce(context.Context) (int, error)
	ConvertPreordersOnce(context.Context) (int, error)
}

// fencePod is one pod's engine, its move store and a way to run SQL on
// its database (statements written with ? placeholders).
type fencePod struct {
	eng   workerEngine
	store pods.MoveStore
	exec  func(q string, args ...any) error
	count func(q string, args ...any) int64
	id    func(uuid.UUID) any // a checkout id as the database stores it
}

// workersConfig: ended holds, sequenced events and audit entries are old
// at once, so the purge has each shop's rows to delete.
var workersConfig = holdfast.Config{OutcomeRetention: time.Microsecond, EventRetention: time.Microsecond, EventRetentionMax: time.Microsecond, AuditRetention: time.Microsecond}

// TestWorkersSkipFencedShop: while a move fences one shop of a pod, each of
// the pod's maintenance passes — the sweeper, the event sequencer, the
// waitlist server, the replenisher, pre-order conversion and the purge —
// finishes within a bound and does the other shops' work, leaving the
// fenced shop's for after the fence. A pass that retried a batch the guard
// refused would wait out the fence, for every shop of the pod.
func TestWorkersSkipFencedShop(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		a := newPodWith(t, "a", serverA, workersConfig)
		ctx := context.Background()
		workersSkipFencedShop(t, fencePod{
			eng:   a.eng,
			store: pgmove.New(a.pool),
			exec: func(q string, args ...any) error {
				_, err := a.pool.Exec(ctx, dollars(q), args...)
				return err
			},
			count: func(q string, args ...any) int64 { return count(t, a, dollars(q), args...) },
			id:    func(id uuid.UUID) any { return id.String() },
		})
	})
	t.Run("mariadb", func(t *testing.T) {
		t.Parallel()
		mdb := mysqltest.DB(t, 8)
		eng, err := mysql.New(mdb.DB, workersConfig)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		workersSkipFencedShop(t, fencePod{
			eng:   eng,
			store: mymove.New(mdb.DB),
			exec: func(q string, args ...any) error {
				_, err := mdb.DB.ExecContext(ctx, q, args...)
				return err
			},
			count: func(q string, args ...any) int64 {
				var n int64
				if err := mdb.DB.QueryRowContext(ctx, q, args...).Scan(&n); err != nil && !errors.Is(err, sql.ErrNoRows) {
					t.Fatalf("%s: %v", q, err)
				}
				return n
			},
			id: func(id uuid.UUID) any { return id[:] },
		})
	})
}

// dollars numbers a statement's ? placeholders for PostgreSQL.
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func workersSkipFencedShop(t *testing.T, p fencePod) {
	ctx := context.Background()
	e := p.eng
	held := map[int64]holdfast.ReserveParams{}
	waiting := map[int64]holdfast.ReserveParams{}
	var lapsed, swept holdfast.ReserveParams
	var wl *holdfast.WaitlistedError
	for shop := int64(1); shop <= 2; shop++ {
		stock(t, e, shop, 2)
		h := cart(shop)
		if _, err := e.Reserve(ctx, h); err != nil {
			t.Fatal(err)
		}
		held[shop] = h
		// A second hold, whose expiry has passed: the sweeper's.
		s := cart(shop)
		if _, err := e.Reserve(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := p.exec("UPDATE holds SET expires_at = ? WHERE shop_id = ? AND checkout_id = ?", time.Now().Add(-time.Hour).UTC(), shop, p.id(s.CheckoutID)); err != nil {
			t.Fatal(err)
		}
		if shop == 1 {
			swept = s
		}
		w := cart(shop)
		w.Wait = 10 * time.Minute
		if _, err := e.Reserve(ctx, w); !errors.As(err, &wl) {
			t.Fatalf("shop %d: wait: %v, want a waitlisted answer", shop, err)
		}
		waiting[shop] = w
		if shop == 1 {
			// A second waiter behind it, whose wait has run out: the
			// waitlist server ends it as expired, once it may write.
			l := cart(shop)
			l.Wait = 10 * time.Minute
			if _, err := e.Reserve(ctx, l); !errors.As(err, &wl) {
				t.Fatalf("shop 1: second wait: %v, want a waitlisted answer", err)
			}
			if err := p.exec("UPDATE waiters SET wait_until = ? WHERE shop_id = 1 AND checkout_id = ?", time.Now().Add(-time.Hour).UTC(), p.id(l.CheckoutID)); err != nil {
				t.Fatal(err)
			}
			lapsed = l
		}
		// The first hold's unit comes back: the waitlist server's pass
		// (this client runs none: Start was not called) grants it.
		if _, err := e.Release(ctx, shop, h.CheckoutID); err != nil {
			t.Fatal(err)
		}
	}
	f, err := p.store.Fence(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			_ = f.Release(ctx)
		}
	}()
	pass := func(name string, run func(context.Context) (int, error)) {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		start := time.Now()
		if _, err := run(pctx); err != nil {
			t.Fatalf("%s with shop 1 fenced: %v (after %v)", name, err, time.Since(start).Round(time.Millisecond))
		}
	}
	status := func(shop int64, id uuid.UUID) int64 {
		return p.count("SELECT count(*) FROM holds WHERE shop_id = ? AND checkout_id = ? AND status = 'expired'", shop, p.id(id))
	}
	pass("SweepOnce", e.SweepOnce)
	if s1, s2 := status(1, swept.CheckoutID), p.count("SELECT count(*) FROM holds WHERE shop_id = 2 AND status = 'expired'"); s1 != 0 || s2 != 1 {
		t.Fatalf("sweep under the fence: shop 1 %d expired, shop 2 %d; want 0, 1", s1, s2)
	}
	pass("SequenceEvents", e.SequenceEvents)
	pass("ServeWaitlist", e.ServeWaitlist)
	pass("Replenish", e.Replenish)
	pass("ConvertPreordersOnce", e.ConvertPreordersOnce)

	// Shop 2's waiter was granted; shop 1's two still wait.
	if h, err := e.Hold(ctx, 2, waiting[2].CheckoutID); err != nil || h.Status != holdfast.StatusHeld {
		t.Fatalf("shop 2's waiter under the fence: %+v, %v; want a held hold", h, err)
	}
	if n := p.count("SELECT count(*) FROM waiters WHERE shop_id = 1 AND status = 'waiting'"); n != 2 {
		t.Fatalf("shop 1's waiters under the fence: %d waiting, want 2 (nothing of a fenced shop written)", n)
	}
	// Shop 2's events were sequenced: its feed has them.
	if evs, err := e.Events(ctx, 2, 0, 100); err != nil || len(evs) == 0 {
		t.Fatalf("shop 2's events under the fence: %d, %v; want them sequenced", len(evs), err)
	}
	// The purge last (it deletes what the checks above read): shop 2's
	// released hold goes, shop 1's stays until the fence ends.
	pass("PurgeOnce", e.PurgeOnce)
	ended := func(shop int64) int64 {
		return p.count("SELECT count(*) FROM holds WHERE shop_id = ? AND checkout_id = ?", shop, p.id(held[shop].CheckoutID))
	}
	if n1, n2 := ended(1), ended(2); n1 != 1 || n2 != 0 {
		t.Fatalf("purge under the fence: shop 1's released hold %d rows, shop 2's %d; want 1, 0", n1, n2)
	}

	if err := f.Release(ctx); err != nil {
		t.Fatal(err)
	}
	released = true
	pass("SweepOnce", e.SweepOnce)
	pass("SequenceEvents", e.SequenceEvents)
	pass("ServeWaitlist", e.ServeWaitlist)
	if s := status(1, swept.CheckoutID); s != 1 {
		t.Fatalf("sweep after the fence: shop 1's lapsed hold not expired")
	}
	if h, err := e.Hold(ctx, 1, waiting[1].CheckoutID); err != nil || h.Status != holdfast.StatusHeld {
		t.Fatalf("shop 1's waiter after the fence: %+v, %v; want a held hold", h, err)
	}
	if _, err := e.Hold(ctx, 1, lapsed.CheckoutID); !errors.Is(err, holdfast.ErrWaitExpired) {
		t.Fatalf("shop 1's lapsed waiter after the fence: %v; want it expired", err)
	}
	if evs, err := e.Events(ctx, 1, 0, 100); err != nil || len(evs) == 0 {
		t.Fatalf("shop 1's events after the fence: %d, %v; want them sequenced", len(evs), err)
	}
	pass("PurgeOnce", e.PurgeOnce)
	if n := ended(1); n != 0 {
		t.Fatalf("purge after the fence: shop 1's released hold %d rows, want 0", n)
	}
	checkInvariant(t, "a", e)
}
