package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/bench/hotbench"
)

// poolSlack is the connections a run's pool has beyond its clients: the
// engine's background workers and the audit.
const poolSlack = 4

// Run runs every selected (scenario, clients, strategy) combination and
// returns the report. A run that oversells or fails its audit does not stop
// the others; Run then returns the full report and an error wrapping
// ErrIncorrect. Other errors (the server, setup) stop the bench.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	r, err := newRunner(ctx, o)
	if err != nil {
		return nil, err
	}
	defer r.close()
	rep := &Report{Ceilings: map[int]float64{}, Duration: o.Duration.String(), Attempts: o.Attempts, TxWork: o.TxWork.String(), LoadBefore: loadAvg()}
	if o.Attempts > 0 {
		rep.Duration = ""
	}
	if !o.NoLimit && o.Attempts == 0 {
		lim, err := r.limit(ctx)
		rep.Limits = lim
		if err != nil {
			return rep, fmt.Errorf("bench: durable limit: %w", err)
		}
	}
	var failed []string
	for _, name := range o.Scenarios {
		sc, _ := newScenario(name, &o)
		clients := o.Clients
		if name == ScenarioSoldout {
			clients = []int{o.SoldoutClients}
		}
		for _, c := range clients {
			ceiling, err := r.ceiling(ctx, c)
			if err != nil {
				return rep, err
			}
			rep.Ceilings[c] = ceiling
			for _, st := range o.Strategies {
				if sc.engineOnly && !IsEngine(st) {
					continue
				}
				run := r.run
				if sc.avail {
					run = r.runAvail
				}
				res, err := run(ctx, st, sc, c)
				if err != nil {
					return rep, fmt.Errorf("bench: %s %s c=%d: %w", st, name, c, err)
				}
				res.CommitCeiling = ceiling
				if res.Failed() {
					msg := fmt.Sprintf("%s %s c=%d: oversold %d: %s", st, name, c, res.Oversold, res.Problem)
					failed = append(failed, msg)
					r.progressDone()
					if o.Progress != nil {
						fmt.Fprintln(o.Progress, "!!! INCORRECT:", msg)
					}
				}
				rep.Runs = append(rep.Runs, *res)
			}
		}
	}
	r.progressDone()
	rep.Elapsed = time.Since(start).Round(time.Second).String()
	rep.LoadAfter = loadAvg()
	if len(failed) > 0 {
		return rep, fmt.Errorf("%w:\n  %s", ErrIncorrect, strings.Join(failed, "\n  "))
	}
	return rep, nil
}

// runner holds what runs share: the server, the templates, the ceilings.
type runner struct {
	o         Options
	srv       *server
	meter     *pgMeter // what the server spent, for the cost per hold
	base      string
	templates map[string]string // strategy/keySet -> template database
	ceilDB    string
	ceilings  map[int]float64

	// Soak's hooks: a longer window (or more attempts), sampled every tick
	// (or every tickAttempts attempts per client).
	window       time.Duration
	tick         time.Duration
	attempts     int
	tickAttempts int
	onTick       func(holds int64, elapsed time.Duration)
	onRun        func(pool *pgxpool.Pool, rs reserver)

	// The progress line: redrawn in place on a terminal, else plain lines
	// at most every Options.ProgressEvery.
	tty          bool
	lastProgress time.Time
}

func newRunner(ctx context.Context, o Options) (*runner, error) {
	srv := newServer(o.URL)
	base, err := srv.base(ctx)
	if err != nil {
		srv.close()
		return nil, err
	}
	return &runner{o: o, srv: srv, meter: &pgMeter{url: o.URL}, base: base, templates: map[string]string{}, ceilings: map[int]float64{}, tty: isTerminal(o.Progress)}, nil
}

func (r *runner) close() {
	r.srv.close()
	r.meter.close()
}

// template returns the stocked template of strategy for sc's key set,
// creating it on first use.
func (r *runner) template(ctx context.Context, strategy string, sc *scenario) (string, error) {
	k := strategy + "/" + sc.keySet
	if t, ok := r.templates[k]; ok {
		return t, nil
	}
	r.progress("setup %s %s: %d keys x %d units", strategy, sc.keySet, len(sc.keys), sc.units)
	name := r.srv.name("tmpl", strategy, sc.keySet)
	if err := r.srv.create(ctx, name, r.base); err != nil {
		return "", err
	}
	pool, err := r.srv.pool(ctx, name, setupWorkers+2, "holdfast-bench-setup")
	if err != nil {
		return "", err
	}
	rs, err := openReserver(strategy, pool, newCounters(), r.o.Logger)
	if err == nil {
		err = rs.setup(ctx, sc.keys, sc.units)
	}
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("setup %s: %w", k, err)
	}
	r.templates[k] = name
	return name, nil
}

// run measures one strategy on one scenario at one client count, on a
// fresh copy of the strategy's template, and audits the database after.
func (r *runner) run(ctx context.Context, strategy string, sc *scenario, clients int) (*Result, error) {
	tmpl, err := r.template(ctx, strategy, sc)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("%-10s %-8s c=%-3d", strategy, sc.name, clients)
	r.progress("%s creating database", label)
	db := r.srv.name(strategy, sc.name, strconv.Itoa(clients))
	if err := r.srv.create(ctx, db, tmpl); err != nil {
		return nil, err
	}
	defer func() {
		r.progress("%s dropping database", label)
		_ = r.srv.drop(context.WithoutCancel(ctx), db)
	}()
	r.srv.checkpoint(ctx)
	pool, err := r.srv.pool(ctx, db, clients+poolSlack, "holdfast-bench")
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	counters := newCounters()
	rs, err := openReserver(strategy, pool, counters, r.o.Logger)
	if err != nil {
		return nil, err
	}
	if r.onRun != nil {
		r.onRun(pool, rs)
	}
	res := &Result{Strategy: strategy, Scenario: sc.name, Clients: clients}
	dead0, created0, err := deadTuples(ctx, pool, rs.tables())
	if err != nil {
		return nil, err
	}
	rs.start(ctx)
	op := reserveOp(rs, sc, pool, r.o.TxWork)
	var m *measurement
	switch {
	case sc.name == ScenarioSoldout:
		m, err = r.counted(ctx, pool, db, label, clients, r.o.SoldoutAttempts, op, 0, nil)
	case r.attempts > 0:
		m, err = r.counted(ctx, pool, db, label, clients, r.attempts, op, int64(clients*r.tickAttempts), r.onTick)
	case r.o.Attempts > 0:
		m, err = r.counted(ctx, pool, db, label, clients, r.o.Attempts, op, 0, nil)
	default:
		window := r.o.Duration
		if r.window > 0 {
			window = r.window
		}
		m, err = r.timed(ctx, pool, db, label, clients, r.o.Warmup, window, op, r.tick, r.onTick)
	}
	r.progress("%s stopping", label)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	stopErr := rs.stop(stopCtx)
	cancel()
	if err == nil {
		err = stopErr
	}
	if err != nil {
		return nil, err
	}
	m.fill(res)
	if sc.name == ScenarioSoldout || m.window == 0 {
		res.ElapsedMs = hotbench.Ms(m.elapsed)
		res.HoldsPerSec = float64(m.holds) / m.elapsed.Seconds()
	}
	res.RetriesByCode, res.InlineRefills = counters.snapshot()
	for _, n := range res.RetriesByCode {
		res.Retries += n
	}
	r.progress("%s reading statistics", label)
	flushStats(ctx, pool)
	dead1, created1, err := deadTuples(ctx, pool, rs.tables())
	if err != nil {
		return nil, err
	}
	res.DeadTuples, res.DeadCreated = dead1-dead0, created1-created0
	r.progress("%s auditing", label)
	a, err := rs.audit(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	res.HeldUnits, res.Confirmed, res.Oversold = a.held, m.confirmed, a.oversold
	var problems []string
	if a.oversold > 0 {
		problems = append(problems, fmt.Sprintf("%d units held beyond stock", a.oversold))
	}
	if a.problem != "" {
		problems = append(problems, a.problem)
	}
	if a.held != m.confirmed {
		problems = append(problems, fmt.Sprintf("%d units held but %d confirmed to buyers", a.held, m.confirmed))
	}
	if sc.name == ScenarioSoldout && a.held != int64(sc.units) {
		problems = append(problems, fmt.Sprintf("sold %d of %d units", a.held, sc.units))
	}
	res.Problem = strings.Join(problems, "; ")
	r.progress("%s closing", label)
	return res, nil
}

// limit measures the durable limit (hotbench.MeasureLimit) on the bench's
// server, with the bench's window.
func (r *runner) limit(ctx context.Context) ([]*hotbench.Result, error) {
	r.progress("durable limit: %d connections x %d holds per transaction", hotbench.LimitConns, hotbench.LimitBatch)
	t := &HotTarget{srv: r.srv, meter: r.meter}
	return hotbench.MeasureLimit(ctx, t, hotbench.Options{Duration: r.o.Duration, Warmup: r.o.Warmup})
}

// runAvail measures availability reads of the hot key (hotbench's avail:
// AvailHolds holds on it, each read checked against what it has left, an
// audit after) on a fresh database of the bench's server. Reads/s go in
// HoldsPerSec, the CPU per read in the costs.
func (r *runner) runAvail(ctx context.Context, strategy string, sc *scenario, clients int) (*Result, error) {
	r.progress("%-10s %-8s c=%-3d reading", strategy, sc.name, clients)
	t := &HotTarget{srv: r.srv, meter: r.meter}
	h, err := hotbench.RunOne(ctx, t, hotbench.Options{Duration: r.o.Duration, Warmup: r.o.Warmup, HotStock: r.o.HotStock}, hotbench.ScenarioAvail, strategy, clients)
	if err != nil {
		return nil, err
	}
	return &Result{
		Strategy: strategy, Scenario: sc.name, Clients: clients,
		HoldsPerSec: h.HoldsPerSec, P50ms: h.P50ms, P99ms: h.P99ms,
		Holds: h.Holds, Errors: h.Errors, ErrorsByCode: h.ErrorKinds,
		Oversold: int64(h.Oversold), Problem: h.Problem, Cost: h.Cost,
	}, nil
}

// op is one attempt: the units it reserved, or why not.
type op func(ctx context.Context, rng *rand.Rand) (int, error)

// reserveOp is a scenario's attempt on a reserver: a fresh checkout, in its
// own transaction, or (hot-tx) in a caller transaction that does txWork of
// simulated checkout work before committing.
func reserveOp(rs reserver, sc *scenario, pool *pgxpool.Pool, txWork time.Duration) op {
	return func(ctx context.Context, rng *rand.Rand) (int, error) {
		lines := sc.lines(rng)
		units := 0
		for _, l := range lines {
			units += l.Quantity
		}
		checkout := uuid.New()
		if !sc.inTx {
			return units, rs.reserve(ctx, benchShop, checkout, lines)
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			return units, err
		}
		err = rs.reserveTx(ctx, tx, benchShop, checkout, lines)
		if err == nil {
			_, err = tx.Exec(ctx, "SELECT pg_sleep($1)", txWork.Seconds())
		}
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return units, err
		}
		return units, tx.Commit(ctx)
	}
}

// ceiling measures the durable-commit ceiling at clients: one-row inserts,
// one per transaction, into a scratch table.
func (r *runner) ceiling(ctx context.Context, clients int) (float64, error) {
	if c, ok := r.ceilings[clients]; ok {
		return c, nil
	}
	if r.ceilDB == "" {
		name := r.srv.name("ceiling")
		if err := r.srv.create(ctx, name, ""); err != nil {
			return 0, err
		}
		r.ceilDB = name
	}
	pool, err := r.srv.pool(ctx, r.ceilDB, clients+poolSlack, "holdfast-bench-ceiling")
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, query("ceiling_schema")); err != nil {
		return 0, err
	}
	r.srv.checkpoint(ctx)
	insert := query("ceiling_insert")
	label := fmt.Sprintf("%-10s %-8s c=%-3d", "ceiling", "commit", clients)
	do := func(ctx context.Context, _ *rand.Rand) (int, error) {
		_, err := pool.Exec(ctx, insert, uuid.New())
		return 1, err
	}
	var m *measurement
	if r.o.Attempts > 0 {
		m, err = r.counted(ctx, pool, r.ceilDB, label, clients, r.o.Attempts, do, 0, nil)
	} else {
		m, err = r.timed(ctx, pool, r.ceilDB, label, clients, r.o.Warmup, r.o.Duration, do, 0, nil)
	}
	if err != nil {
		return 0, err
	}
	if m.errors > 0 {
		return 0, fmt.Errorf("commit ceiling: %d errors (%v)", m.errors, m.codes)
	}
	span := r.o.Duration
	if m.window == 0 {
		span = m.elapsed
	}
	c := float64(m.holds) / span.Seconds()
	r.ceilings[clients] = c
	return c, nil
}
