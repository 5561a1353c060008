package faulttest_test

import (
	"context"
	"errors"
	"strings"
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
// hold is minutes old, its deadline an hour away.
var _ = scenario("race/extend-vs-first-reserve", func(t *testing.T) {
	if !faulttest.KnownBugs() {
		t.Skip("known engine bug (Extend answers ErrLifetimeExceeded when it races the hold's creation); set HOLDFAST_KNOWN_BUGS=1 to run")
	}
	e := faulttest.New(t, faulttest.Options{})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	e.AddKey(k, holdfast.StrategyCounter, 10)
	co := uuid.New()

	atCommit := make(chan struct{}) // the reserve is about to commit
	goCommit := make(chan struct{}) // let it
	reserved := make(chan error, 1) // the reserve returned
	e.Hook.SetBeforeStatement(func(ctx context.Context, _ *pgx.Conn, sql string) {
		switch ctx.Value(actor{}) {
		case "reserve":
			if strings.EqualFold(strings.TrimSpace(sql), "commit") {
				close(atCommit)
				<-goCommit
			}
		case "extend":
			if strings.Contains(sql, "SELECT status, lines") {
				// extend_hold found no row; commit the reserve before the
				// read that decides the answer.
				close(goCommit)
				<-reserved
			}
		}
	})
	go func() {
		_, err := e.Client.Reserve(context.WithValue(ctx, actor{}, "reserve"),
			holdfast.ReserveParams{ShopID: 1, CheckoutID: co, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}}, TTL: 5 * time.Minute})
		reserved <- err
		close(reserved)
	}()
	<-atCommit
	_, err := e.Client.Extend(context.WithValue(ctx, actor{}, "extend"), 1, co, 10*time.Minute)
	e.Hook.SetBeforeStatement(nil)
	if rerr := <-reserved; rerr != nil {
		t.Fatalf("reserve: %v", rerr)
	}
	if err != nil && !errors.Is(err, holdfast.ErrNotFound) {
		e.Violation("extend racing the first reserve answered %v; want success or ErrNotFound", err)
	}
	e.Tally.Inject("extend racing its reservation's commit", 1)
	e.Verify(ctx)
})
