package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { mysqltest.MainHeavy(m) }

// env is one test's database and client.
type env struct {
	t     *testing.T
	db    *mysqltest.Database
	c     *mysql.Client
	clock *pgtest.Clock
}

// newEnv returns a client on a fresh database with an injected clock.
func newEnv(t *testing.T, maxConns int, cfg holdfast.Config) *env {
	t.Helper()
	db := mysqltest.DB(t, maxConns)
	clock := pgtest.NewClock(time.Time{})
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	c, err := mysql.New(db.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, c: c, clock: clock}
}

func (e *env) stock(k holdfast.Key, n int) {
	e.t.Helper()
	if _, err := e.c.ChangeStock(context.Background(), holdfast.StockChange{Key: k, Set: &n, Reason: "test"}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) strategy(k holdfast.Key, s holdfast.Strategy, poolCap int) {
	e.t.Helper()
	if _, err := e.c.SetStrategy(context.Background(), k, s, poolCap); err != nil {
		e.t.Fatal(err)
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

func (e *env) checkInvariant() {
	e.t.Helper()
	rep, err := e.c.CheckInvariant(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	if !rep.OK() {
		e.t.Fatalf("invariant: %s", rep)
	}
}

func (e *env) reserve(shop int64, lines ...holdfast.Line) (*holdfast.Hold, error) {
	return e.c.Reserve(context.Background(), holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: lines})
}

var strategies = []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyPool, holdfast.StrategyBatch}

// uuidFor is a fixed checkout id, readable in failures.
func uuidFor(n byte) uuid.UUID { return uuid.UUID{15: n, 0: 0xc0} }
