package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/term"

	"github.com/holdfast/holdfast"
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
				res, err := r.run(ctx, st, sc, c)
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
	return &runner{o: o, srv: srv, base: base, templates: map[string]string{}, ceilings: map[int]float64{}, tty: isTerminal(o.Progress)}, nil
}

func (r *runner) close() { r.srv.close() }

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
		res.ElapsedMs = ms(m.elapsed)
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

// measurement is what a run's clients saw.
type measurement struct {
	holds, soldOut, errors int64
	codes                  map[string]int64
	lat                    []time.Duration
	confirmed              int64         // units of every success, outside the window too
	window                 time.Duration // a timed run's window; zero for counted runs
	elapsed                time.Duration // a counted run's time to answer every attempt
	waits                  map[string]float64
	goCPU, pgCPU, otherCPU float64
}

func (m *measurement) fill(res *Result) {
	res.Holds, res.SoldOut, res.Errors = m.holds, m.soldOut, m.errors
	if len(m.codes) > 0 {
		res.ErrorsByCode = m.codes
	}
	if m.window > 0 {
		res.HoldsPerSec = float64(m.holds) / m.window.Seconds()
	}
	slices.Sort(m.lat)
	res.P50ms, res.P95ms, res.P99ms = ms(percentile(m.lat, 0.50)), ms(percentile(m.lat, 0.95)), ms(percentile(m.lat, 0.99))
	if n := len(m.lat); n > 0 {
		res.Maxms = ms(m.lat[n-1])
	}
	res.Waits, res.GoCPU, res.PgCPU, res.OtherCPU = m.waits, m.goCPU, m.pgCPU, m.otherCPU
}

// percentile is the nearest-rank q-quantile of sorted.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

// tally is one client's share of a measurement.
type tally struct {
	holds, soldOut, errors, confirmed int64
	codes                             map[string]int64
	lat                               []time.Duration
}

func (t *tally) record(units int, err error, d time.Duration, inWindow bool) {
	if err == nil {
		t.confirmed += int64(units)
	}
	if !inWindow {
		return
	}
	t.lat = append(t.lat, d)
	switch {
	case err == nil:
		t.holds++
	case errors.Is(err, holdfast.ErrInsufficientStock):
		t.soldOut++
	default:
		t.errors++
		if t.codes == nil {
			t.codes = map[string]int64{}
		}
		t.codes[errorCode(err)]++
	}
}

func merge(ts []*tally) *measurement {
	m := &measurement{}
	for _, t := range ts {
		m.holds += t.holds
		m.soldOut += t.soldOut
		m.errors += t.errors
		m.confirmed += t.confirmed
		m.lat = append(m.lat, t.lat...)
		for k, v := range t.codes {
			if m.codes == nil {
				m.codes = map[string]int64{}
			}
			m.codes[k] += v
		}
	}
	return m
}

// prewarm opens n connections so the first attempts do not pay for them.
func prewarm(ctx context.Context, pool *pgxpool.Pool, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// timed runs op from clients goroutines: warmup, then window measured.
// Every tick (when positive) onTick gets the holds of the window so far and
// the time since the window began.
func (r *runner) timed(ctx context.Context, pool *pgxpool.Pool, db, label string, clients int, warmup, window time.Duration, do op, tick time.Duration, onTick func(holds int64, elapsed time.Duration)) (*measurement, error) {
	if err := prewarm(ctx, pool, clients); err != nil {
		return nil, err
	}
	from := time.Now().Add(warmup)
	to := from.Add(window)
	var stop atomic.Bool
	var live atomic.Int64
	ts := make([]*tally, clients)
	var wg sync.WaitGroup
	for i := range ts {
		t := &tally{}
		ts[i] = t
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
			for !stop.Load() && ctx.Err() == nil {
				t0 := time.Now()
				units, err := do(ctx, rng)
				t1 := time.Now()
				in := !t0.Before(from) && !t1.After(to)
				t.record(units, err, t1.Sub(t0), in)
				if in && err == nil {
					live.Add(1)
				}
			}
		}(uint64(i))
	}
	sampler := r.sample(ctx, db, from, to)
	statConn := r.statConn(ctx)
	defer closeConn(statConn)
	var cpu0 cpuSample
	started := false
	nextTick := from.Add(tick)
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for now := time.Now(); now.Before(to) && ctx.Err() == nil; now = time.Now() {
		if !started && !now.Before(from) {
			cpu0, started = readCPU(ctx, statConn, db), true
		}
		if tick > 0 && !now.Before(nextTick) {
			onTick(live.Load(), now.Sub(from))
			nextTick = nextTick.Add(tick)
		}
		if now.Before(from) {
			r.progress("%s warmup %4.1fs", label, warmup.Seconds()-from.Sub(now).Seconds())
		} else {
			r.progress("%s %5.1fs/%.0fs  holds %d", label, now.Sub(from).Seconds(), window.Seconds(), live.Load())
		}
		select {
		case <-ticker.C:
		case <-ctx.Done():
		}
	}
	cpu1 := readCPU(ctx, statConn, db)
	if tick > 0 {
		onTick(live.Load(), time.Since(from))
	}
	stop.Store(true)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := merge(ts)
	m.window = window
	m.waits = <-sampler
	m.goCPU, m.pgCPU, m.otherCPU = cpuShare(cpu0, cpu1)
	return m, nil
}

// counted runs attempts ops from each of clients goroutines, all released
// at once, and measures the time until every attempt is answered: a fixed
// amount of work, whatever the machine's speed. When tickEvery is positive,
// onTick gets the successes so far and the time since the release each
// time the clients together have made another tickEvery attempts.
func (r *runner) counted(ctx context.Context, pool *pgxpool.Pool, db, label string, clients, attempts int, do op, tickEvery int64, onTick func(holds int64, elapsed time.Duration)) (*measurement, error) {
	if err := prewarm(ctx, pool, clients); err != nil {
		return nil, err
	}
	total := int64(clients) * int64(attempts)
	r.progress("%s %d x %d attempts", label, clients, attempts)
	var ticks chan struct{}
	if tickEvery > 0 {
		// Room for every tick: a worker never blocks on a slow sampler.
		ticks = make(chan struct{}, total/tickEvery+1)
	}
	var done, live atomic.Int64
	ts := make([]*tally, clients)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ts {
		t := &tally{}
		ts[i] = t
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			<-gate
			for range attempts {
				if ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				units, err := do(ctx, rng)
				t.record(units, err, time.Since(t0), true)
				if err == nil {
					live.Add(1)
				}
				if n := done.Add(1); ticks != nil && n%tickEvery == 0 {
					ticks <- struct{}{}
				}
			}
		}(uint64(i))
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	sampleCtx, cancel := context.WithCancel(ctx)
	sampler := r.sample(sampleCtx, db, time.Now(), time.Now().Add(time.Hour))
	statConn := r.statConn(ctx)
	defer closeConn(statConn)
	cpu0 := readCPU(ctx, statConn, db)
	start := time.Now()
	close(gate)
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for running := true; running; {
		select {
		case <-ticks:
			onTick(live.Load(), time.Since(start))
		case <-ticker.C:
			r.progress("%s %5.1fs  %d/%d attempts  holds %d", label, time.Since(start).Seconds(), done.Load(), total, live.Load())
		case <-finished:
			running = false
		}
	}
	elapsed := time.Since(start)
	for len(ticks) > 0 {
		<-ticks
		onTick(live.Load(), elapsed)
	}
	cpu1 := readCPU(ctx, statConn, db)
	cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := merge(ts)
	m.elapsed = elapsed
	m.waits = <-sampler
	m.goCPU, m.pgCPU, m.otherCPU = cpuShare(cpu0, cpu1)
	return m, nil
}

// statConn opens a connection for reading the run database's backend pids,
// or returns nil.
func (r *runner) statConn(ctx context.Context) *pgx.Conn {
	c, err := pgx.Connect(ctx, r.o.URL)
	if err != nil {
		return nil
	}
	return c
}

func closeConn(c *pgx.Conn) {
	if c != nil {
		_ = c.Close(context.Background())
	}
}

// sample polls pg_stat_activity for db's busy backends every
// Options.WaitSample between from and to (or until ctx ends) and sends the
// average backends per wait event. A sampler that cannot connect sends nil.
func (r *runner) sample(ctx context.Context, db string, from, to time.Time) <-chan map[string]float64 {
	out := make(chan map[string]float64, 1)
	go func() {
		conn, err := pgx.Connect(ctx, r.o.URL)
		if err != nil {
			out <- nil
			return
		}
		defer conn.Close(context.WithoutCancel(ctx))
		q := query("waits")
		sums := map[string]float64{}
		n := 0
		t := time.NewTicker(r.o.WaitSample)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
			case now := <-t.C:
				if now.Before(from) {
					continue
				}
				if now.Before(to) {
					rows, err := conn.Query(ctx, q, db)
					if err == nil {
						for rows.Next() {
							var ev string
							var c int
							if rows.Scan(&ev, &c) == nil {
								sums[ev] += float64(c)
							}
						}
						rows.Close()
						n++
					}
					continue
				}
			}
			break
		}
		if n == 0 {
			out <- nil
			return
		}
		for k, v := range sums {
			sums[k] = math.Round(v/float64(n)*100) / 100
		}
		out <- sums
	}()
	return out
}

// flushStats makes every idle connection of pool flush its table
// statistics, so the dead-tuple counts read next are current.
func flushStats(ctx context.Context, pool *pgxpool.Pool) {
	for _, c := range pool.AcquireAllIdle(ctx) {
		_, _ = c.Exec(ctx, "SELECT pg_stat_force_next_flush()")
		c.Release()
	}
}

func deadTuples(ctx context.Context, pool *pgxpool.Pool, tables []string) (dead, created int64, err error) {
	err = pool.QueryRow(ctx, query("stats_tables"), tables).Scan(&dead, &created)
	return dead, created, err
}

// loadAvg returns the 1, 5 and 15 minute load averages, or "" when unknown.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuSample is this process's CPU time, the run database's backends' CPU
// time and the machine's CPU counters.
type cpuSample struct {
	at        time.Time
	self      time.Duration
	pg        map[int]uint64 // backend pid -> utime+stime ticks; nil when unreadable
	busy, all uint64         // jiffies from /proc/stat; zero when unreadable
}

// clockTicks is Linux's USER_HZ, the unit of /proc CPU times.
const clockTicks = 100

// readCPU samples CPU counters; conn (may be nil) lists db's backends, whose
// CPU time is read from /proc when the server runs on this machine.
func readCPU(ctx context.Context, conn *pgx.Conn, db string) cpuSample {
	s := cpuSample{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if conn != nil {
		rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", db)
		if err == nil {
			pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err == nil {
				s.pg = map[int]uint64{}
				for _, pid := range pids {
					if t, ok := procTicks(int(pid)); ok {
						s.pg[int(pid)] = t
					}
				}
			}
		}
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	for i, v := range f[1:9] {
		n, _ := strconv.ParseUint(v, 10, 64)
		s.all += n
		if i != 3 && i != 4 { // idle, iowait
			s.busy += n
		}
	}
	return s
}

// procTicks returns a process's user+system CPU ticks from /proc/pid/stat.
func procTicks(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces; fields resume after ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}

// cpuShare returns the percent of the machine's CPU used between a and b by
// this process, by the run database's backends (0 when unreadable, e.g. a
// remote server) and by everything else.
func cpuShare(a, b cpuSample) (goPct, pgPct, otherPct float64) {
	wall := b.at.Sub(a.at)
	if wall <= 0 {
		return 0, 0, 0
	}
	capacity := float64(wall) * float64(runtime.NumCPU())
	goPct = 100 * float64(b.self-a.self) / capacity
	var ticks uint64
	for pid, t := range b.pg {
		if t0, ok := a.pg[pid]; ok && t >= t0 {
			ticks += t - t0
		}
	}
	pgPct = 100 * float64(time.Duration(ticks)*time.Second/clockTicks) / capacity
	if b.all > a.all {
		busy := 100 * float64(b.busy-a.busy) / float64(b.all-a.all)
		otherPct = max(0, busy-goPct-pgPct)
	}
	r := func(v float64) float64 { return math.Round(v*10) / 10 }
	return r(goPct), r(pgPct), r(otherPct)
}

// isTerminal reports whether w is a terminal, where the progress line may
// be redrawn in place with escapes.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress writes the progress line: redrawn in place on a terminal, else
// a plain line at most every Options.ProgressEvery.
func (r *runner) progress(format string, args ...any) {
	if r.o.Progress == nil {
		return
	}
	if r.tty {
		fmt.Fprintf(r.o.Progress, "\r"+format+"\033[K", args...)
		return
	}
	now := time.Now()
	if !r.lastProgress.IsZero() && now.Sub(r.lastProgress) < r.o.ProgressEvery {
		return
	}
	r.lastProgress = now
	fmt.Fprintf(r.o.Progress, format+"\n", args...)
}

// progressDone ends the progress line.
func (r *runner) progressDone() {
	if r.o.Progress != nil && r.tty {
		fmt.Fprint(r.o.Progress, "\r\033[K")
	}
}
