package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/bench/hotbench"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
)

// HotTarget is PostgreSQL as a hotbench.Target: the hot and hot-tx runner,
// audit and report the MySQL bench uses (mysql/mysqlbench), on the
// PostgreSQL engine, so the two engines can be read figure for figure from
// one runner. Run (the fuller bench) does not use it. Close it when done:
// it drops any database a run left.
type HotTarget struct {
	srv   *server
	meter *pgMeter
}

var (
	_ hotbench.Target = (*HotTarget)(nil)
	_ hotbench.Meter  = (*HotTarget)(nil)
)

// NewHotTarget returns the Target on the server of url (any database; its
// role needs CREATEDB).
func NewHotTarget(url string) *HotTarget {
	return &HotTarget{srv: newServer(url), meter: &pgMeter{url: url}}
}

// Close drops every database the Target made and still has.
func (t *HotTarget) Close() {
	t.srv.close()
	t.meter.close()
}

// Sample reads the server's CPU time (every process of a local server) and
// its WAL position.
func (t *HotTarget) Sample(ctx context.Context) (hotbench.Sample, error) {
	return t.meter.Sample(ctx)
}

// Engine names the engine: "PostgreSQL".
func (t *HotTarget) Engine() string { return "PostgreSQL" }

// Strategies lists the engine's strategies (not the baselines), in order.
func (t *HotTarget) Strategies() []string {
	var out []string
	for _, s := range EngineStrategies {
		out = append(out, string(s))
	}
	return out
}

// Server is the server's version() string.
func (t *HotTarget) Server(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, t.srv.url)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	err = conn.QueryRow(ctx, "SELECT version()").Scan(&v)
	return v, err
}

// ErrorKind names a PostgreSQL error by its SQLSTATE ("sqlstate 40P01").
func (t *HotTarget) ErrorKind(err error) string {
	if s := postgres.SQLState(err); s != "" {
		return "sqlstate " + s
	}
	return ""
}

// Database creates a fresh, empty database with a pool of conns.
func (t *HotTarget) Database(ctx context.Context, conns int) (hotbench.Database, error) {
	name := t.srv.name("hot")
	if err := t.srv.create(ctx, name, ""); err != nil {
		return nil, err
	}
	d := &hotDatabase{srv: t.srv, name: name, ctx: ctx}
	pool, err := t.srv.pool(ctx, name, conns, "holdfast-hotbench")
	if err != nil {
		d.Close()
		return nil, err
	}
	d.pool = pool
	return d, nil
}

// hotDatabase is one hotbench run's database.
type hotDatabase struct {
	srv  *server
	name string
	ctx  context.Context // the creating call's, for the DROP
	pool *pgxpool.Pool
	eng  *postgres.Client
}

func (d *hotDatabase) Close() {
	if d.pool != nil {
		d.pool.Close()
	}
	_ = d.srv.drop(context.WithoutCancel(d.ctx), d.name)
}

func (d *hotDatabase) Ceiling(ctx context.Context) (func(context.Context) error, error) {
	if _, err := d.pool.Exec(ctx, query("ceiling_schema")); err != nil {
		return nil, err
	}
	insert := query("ceiling_insert")
	return func(ctx context.Context) error {
		_, err := d.pool.Exec(ctx, insert, uuid.New())
		return err
	}, nil
}

// Limit creates the durable limit's tables; each hold is one statement,
// committed on its own.
func (d *hotDatabase) Limit(ctx context.Context, stripes int) (hotbench.LimitHold, error) {
	if _, err := d.pool.Exec(ctx, query("limit_schema")); err != nil {
		return nil, err
	}
	if _, err := d.pool.Exec(ctx, query("limit_fill"), stripes); err != nil {
		return nil, err
	}
	hold := query("limit_hold")
	return func(ctx context.Context, stripe int, ids []uuid.UUID) error {
		_, err := d.pool.Exec(ctx, hold, stripe, ids)
		return err
	}, nil
}

func (d *hotDatabase) Engine(ctx context.Context, strategy string) (holdfast.Engine, error) {
	if _, err := migrations.Up(ctx, d.pool); err != nil {
		return nil, fmt.Errorf("bench: migrate: %w", err)
	}
	eng, err := postgres.New(d.pool, holdfast.Config{Strategy: holdfast.Strategy(strategy)})
	if err != nil {
		return nil, err
	}
	d.eng = eng
	return eng, nil
}

func (d *hotDatabase) ReserveTx(ctx context.Context, p holdfast.ReserveParams, work time.Duration) (bool, error) {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	if _, err = d.eng.ReserveTx(ctx, tx, p); err == nil {
		_, err = tx.Exec(ctx, "SELECT pg_sleep($1)", work.Seconds())
	}
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return true, err
	}
	return false, nil
}
