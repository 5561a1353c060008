package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// strategies are the PostgreSQL engine's allocation strategies; this
// package's per-strategy tests run once for each.
var strategies = []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyBatch, holdfast.StrategyPool, holdfast.StrategySlots}

type env struct {
	t     *testing.T
	db    *pgtest.Database
	c     *postgres.Client
	clock *pgtest.Clock
	// allowOver lets the final invariant check accept over-committed keys,
	// for tests that reduce stock below active holds on purpose.
	allowOver bool
}

// newEnv is a client on a fresh database with an injected clock.
func newEnv(t *testing.T, cfg holdfast.Config, maxConns int) *env {
	t.Helper()
	db := pgtest.DB(t, maxConns)
	clock := pgtest.NewClock(time.Time{})
	cfg.Now = clock.Now
	if cfg.StatementTimeout == 0 {
		// A loaded 2-core CI machine can stall a statement past the
		// engine's 5 s default; tests that mean a timeout set their own.
		cfg.StatementTimeout = 2 * time.Minute
	}
	c, err := postgres.New(db.Pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, c: c, clock: clock}
	t.Cleanup(func() { e.checkInvariant(e.allowOver) })
	return e
}

// checkInvariant fails the test unless the whole database satisfies the
// invariant; over-committed keys are allowed only when allowOver is set.
func (e *env) checkInvariant(allowOver bool) *holdfast.InvariantReport {
	e.t.Helper()
	rep, err := e.c.CheckInvariant(context.Background())
	if err != nil {
		e.t.Fatalf("invariant check: %v", err)
	}
	if !rep.OK() || (!allowOver && len(rep.OverCommitted) > 0) {
		e.t.Fatalf("invariant broken: %s", rep)
	}
	return rep
}

func (e *env) stock(k holdfast.Key, n int) {
	e.t.Helper()
	if _, err := e.c.SetAvailable(context.Background(), k, n, "test stock", ""); err != nil {
		e.t.Fatalf("set available: %v", err)
	}
}

func (e *env) level(k holdfast.Key) *holdfast.Level {
	e.t.Helper()
	l, err := e.c.Level(context.Background(), k)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func one(item int64, q int) []holdfast.Line {
	return []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: q}}
}

func reserve(t *testing.T, c *postgres.Client, shop int64, id uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	t.Helper()
	return c.Reserve(context.Background(), holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: lines})
}

// patient gives a concurrency test's client timeouts that a loaded machine
// does not reach: these tests judge answers, not speed, and a statement
// cancelled because a busy 2-core machine ran it slowly is an
// ErrUnavailable that says nothing about the engine. The timeouts' own
// behaviour is tested by the fault suite.
func patient(cfg holdfast.Config) holdfast.Config {
	cfg.LockTimeout = 30 * time.Second
	cfg.StatementTimeout = 2 * time.Minute
	cfg.IdleInTransactionTimeout = 2 * time.Minute
	return cfg
}
