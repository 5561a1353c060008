package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
)

// TestSoldOutHintWaitsForInFlightAttempt (#10 item 4, docs/FAULTS.md
// finding 7): a checkout's first attempt has inserted its hold row and is
// stalled before its take (a test transaction holds its buyer's lock, which
// a named buyer's reservation takes after its hold row), while another
// checkout holds all the stock; the key is recently sold out,
// so the retry reads the sold-out hint, and in the hint's snapshot the
// stock is short. Then the other hold is released and the first attempt
// gets the units. The retry must not have been told "sold out": it waits
// for the first attempt and answers its hold; when the first attempt rolls
// back instead, the retry reserves by itself (the stock is sellable by
// then).
func TestSoldOutHintWaitsForInFlightAttempt(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		name := "first-commits"
		if !commit {
			name = "first-rolls-back"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			secret := []byte("0123456789abcdef0123456789abcdef")
			e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyCounter, LockTimeout: time.Minute, BuyerSecret: secret}, 0)
			ctx := context.Background()
			// The hint lasts a second from the sold-out answer: a run whose
			// retry started later than that tested nothing, and runs again
			// on a key of its own.
			for item := int64(1); ; item++ {
				if item > 5 {
					t.Fatal("the retry never started within the sold-out hint's second")
				}
				if runHintRace(t, e, ctx, secret, item, commit) {
					return
				}
			}
		})
	}
}

// runHintRace runs the scenario on one key; false means the hint had lapsed
// before the retry started (nothing tested, nothing left held but the
// first attempt's outcome, checked).
func runHintRace(t *testing.T, e *env, ctx context.Context, secret []byte, item int64, commit bool) bool {
	t.Helper()
	k := holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}
	e.stock(k, 2)
	other := uuid.New()
	if _, err := reserve(t, e.c, 1, other, one(item, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := reserve(t, e.c, 1, uuid.New(), one(item, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
		t.Fatalf("sold out: %v", err)
	}
	soldOut := time.Now()

	// L holds the buyer's lock for the item: the first attempt stalls on
	// it after its hold row, before its take.
	l, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Rollback(ctx) //nolint:errcheck
	k1, k2 := postgres.BuyerLockKey(1, item, holdfast.BuyerHash(secret, 1, "buyer"))
	if _, err := l.Exec(ctx, "SELECT pg_advisory_xact_lock($1::int, $2::int)", k1, k2); err != nil {
		t.Fatal(err)
	}
	first, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx) //nolint:errcheck
	id := uuid.New()
	type result struct {
		h   *holdfast.Hold
		err error
	}
	firstDone := make(chan result, 1)
	go func() {
		h, err := e.c.ReserveTx(ctx, first, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(item, 2), BuyerID: "buyer"})
		firstDone <- result{h, err}
	}()
	waitFor(t, "the first attempt to wait for the buyer's lock", func() bool { return lockWaiters(t, e) == 1 })

	// The retry must read the sold-out hint: it is kept fresh for this
	// key, so a loaded machine that takes longer than the hint's
	// second to get here still tests the race (no wall-clock window).
	postgres.HoldSoldOutHint(e.c, k)
	retryDone := make(chan result, 1)
	go func() {
		h, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(item, 2), BuyerID: "buyer"})
		retryDone <- result{h, err}
	}()
	var early *result
	waitFor(t, "the retry to wait for the first attempt, or answer", func() bool {
		select {
		case r := <-retryDone:
			early = &r
			return true
		default:
			return lockWaiters(t, e) == 2
		}
	})
	if early != nil {
		t.Fatalf("item %d: the retry answered while its first attempt was in flight (hint read %v after the sold-out answer): %+v %v",
			item, time.Since(soldOut), early.h, early.err)
	}
	// The stock comes back, then the first attempt proceeds and gets it.
	if _, err := e.c.Release(ctx, 1, other); err != nil {
		t.Fatal(err)
	}
	if err := l.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	f := <-firstDone
	if f.err != nil {
		t.Fatalf("first attempt: %v", f.err)
	}
	if commit {
		if err := first.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	} else if err := first.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-retryDone
	if r.err != nil || r.h.Status != holdfast.StatusHeld || r.h.Replayed != commit {
		t.Fatalf("item %d: retry after the first attempt (committed %v): %+v %v", item, commit, r.h, r.err)
	}
	if lv := e.level(k); lv.Held != 2 || lv.Sellable != 0 {
		t.Fatalf("item %d: level %+v", item, lv)
	}
	return true
}
