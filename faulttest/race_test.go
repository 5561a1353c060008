package faulttest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/faulttest"
)

type actor struct{}

// Extend racing the commit of its checkout's first Reserve: Extend's UPDATE
// runs before the hold is committed (no row), its follow-up read after (the
// hold is held). Found by the history checker (random/commit-cut); this is
// the deterministic schedule, driven through the statement hook. The right
// answers are "extended" or ErrNotFound; ErrLifetimeExceeded is wrong: the
// hold is minutes old, its deadline an hour away. Regression test for
// finding 1 (docs/FAULTS.md), fixed.
var _ = scenario("race/extend-vs-first-reserve", func(t *testing.T) {
	e := faulttest.New(t, faulttest.Options{})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	e.AddKey(k, holdfast.StrategyCounter, 10)
	co := uuid.New()

	atCommit := make(chan struct{}) // the reserve is about to commit
	goCommit := make(chan struct{}) // let it
	reserved := make(chan error, 1) // the reserve returned
	var atOnce, goOnce sync.Once
	var sawUpdate atomic.Bool
	release := func() { goOnce.Do(func() { close(goCommit) }) }
	defer release()
	// Every wait is bounded: a schedule the engine's flow no longer allows
	// fails the test instead of hanging it.
	wait := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		case <-time.After(10 * time.Second):
			return false
		}
	}
	e.Hook.SetBeforeStatement(func(ctx context.Context, _ *pgx.Conn, sql string) {
		switch ctx.Value(actor{}) {
		case "reserve":
			if strings.EqualFold(strings.TrimSpace(sql), "commit") {
				atOnce.Do(func() { close(atCommit) })
				wait(goCommit)
			}
		case "extend":
			if strings.Contains(sql, "UPDATE holds") {
				sawUpdate.Store(true)
				return
			}
			if sawUpdate.Load() && !isCommitSQL(sql) {
				// extend_hold found no row; commit the reserve before the
				// statement after it, which decides the answer.
				release()
				select {
				case err := <-reserved:
					reserved <- err
				case <-time.After(10 * time.Second):
				}
			}
		}
	})
	go func() {
		_, err := e.Client.Reserve(context.WithValue(ctx, actor{}, "reserve"),
			holdfast.ReserveParams{ShopID: 1, CheckoutID: co, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}}, TTL: 5 * time.Minute})
		reserved <- err
	}()
	if !wait(atCommit) {
		release()
		t.Fatal("the reserve never reached its COMMIT through the hook: the engine's flow changed; update the schedule")
	}
	_, err := e.Client.Extend(context.WithValue(ctx, actor{}, "extend"), 1, co, 10*time.Minute)
	release()
	e.Hook.SetBeforeStatement(nil)
	select {
	case rerr := <-reserved:
		if rerr != nil {
			t.Fatalf("reserve: %v", rerr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the reserve did not return")
	}
	if err != nil && !errors.Is(err, holdfast.ErrNotFound) {
		e.Violation("extend racing the first reserve answered %v; want success or ErrNotFound", err)
	}
	e.Tally.Inject("extend racing its reservation's commit", 1)
	e.Verify(ctx)
})

func isCommitSQL(sql string) bool { return strings.EqualFold(strings.TrimSpace(sql), "commit") }
