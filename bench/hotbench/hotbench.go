// Package hotbench measures an engine's strategies on one hot key — the
// scenarios hot (every client reserving one unit) and hot-tx (the same
// inside the caller's transaction with simulated checkout work before
// COMMIT) — as holds/s and latency per (scenario, clients, strategy), each
// against the server's own durable-commit ceiling measured in the same run
// (a one-row INSERT per transaction). Every run gets a fresh database and
// ends with an audit: the engine's invariant check, and the key's held
// units against the holds acknowledged.
//
// It is database-neutral: what a database does — its pools, its databases,
// its ceiling statements, its caller transactions, its error codes — is a
// Target: mysql/mysqlbench's for MySQL and MariaDB (`holdfast bench
// --engine mariadb`), bench.HotTarget for PostgreSQL. Package bench,
// PostgreSQL's fuller bench (`holdfast bench`), shares its percentiles
// (Percentile, Ms).
package hotbench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Scenario names, as in package bench.
const (
	ScenarioHot   = "hot"
	ScenarioHotTx = "hot-tx"
	// ScenarioAvail reads the hot key's availability (Engine.Availability,
	// issue #30 item 4) instead of reserving it, with AvailHolds holds on
	// it: reads/s in the holds/s column, compared with hot's holds/s at
	// the same clients and strategy (avail.go).
	ScenarioAvail = "avail"
)

// Scenarios lists the scenarios this bench runs, in order.
func Scenarios() []string { return []string{ScenarioHot, ScenarioHotTx, ScenarioAvail} }

// ClientsMax bounds Options.Clients: each client holds a connection.
const ClientsMax = 256

// Target is a database server the bench runs on, with its engine.
type Target interface {
	// Engine names the engine for the report's title ("MySQL").
	Engine() string
	// Strategies lists the engine's strategies, in order.
	Strategies() []string
	// Server names the server and its version.
	Server(ctx context.Context) (string, error)
	// Database creates a fresh, empty database with a pool of conns
	// connections.
	Database(ctx context.Context, conns int) (Database, error)
	// ErrorKind names a driver error for the report ("mysql 1213"), or
	// returns "" when err is not one.
	ErrorKind(err error) string
}

// Database is one run's fresh database.
type Database interface {
	// Ceiling creates the ceiling's scratch table and returns its one-row
	// INSERT, one per transaction.
	Ceiling(ctx context.Context) (insert func(context.Context) error, err error)
	// Engine migrates the database and returns the engine on it, configured
	// with strategy. ReserveTx uses that engine.
	Engine(ctx context.Context, strategy string) (holdfast.Engine, error)
	// ReserveTx reserves p in a caller transaction that does work of
	// simulated checkout work before it commits. unknown reports a COMMIT
	// that failed: the reservation's outcome is unknown.
	ReserveTx(ctx context.Context, p holdfast.ReserveParams, work time.Duration) (unknown bool, err error)
	// Limit creates the durable limit's tables (a counter striped over
	// stripes rows, with stock enough for any run, and the narrow holds
	// table keyed (shop, ID)) and returns its transaction (see LimitBatch).
	Limit(ctx context.Context, stripes int) (LimitHold, error)
	// Close closes the pool and drops the database.
	Close()
}

// Options configures Run. Zero values mean their defaults.
type Options struct {
	// Scenarios and Strategies select what runs. Default to all.
	Scenarios  []string
	Strategies []string
	// Clients are the concurrency levels. Default to 1, 8, 32, 64.
	Clients []int
	// Duration is the measured time per run. Defaults to 5 seconds.
	Duration time.Duration
	// Warmup runs before each measurement. Defaults to Duration/5, at most
	// one second.
	Warmup time.Duration
	// TxWork is the simulated checkout work inside each hot-tx
	// transaction. Defaults to 5ms.
	TxWork time.Duration
	// HotStock is the hot key's stock: large enough never to run out.
	// Defaults to 10,000,000.
	HotStock int
	// Progress receives one line per run. Nil is silent.
	Progress io.Writer
	// NoLimit skips the durable limit (MeasureLimit), which Run otherwise
	// measures once, before the other runs.
	NoLimit bool
}

func (o Options) withDefaults(t Target) Options {
	if len(o.Scenarios) == 0 {
		o.Scenarios = Scenarios()
	}
	if len(o.Strategies) == 0 {
		o.Strategies = t.Strategies()
	}
	if len(o.Clients) == 0 {
		o.Clients = []int{1, 8, 32, 64}
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = min(o.Duration/5, time.Second)
	}
	if o.TxWork <= 0 {
		o.TxWork = 5 * time.Millisecond
	}
	if o.HotStock <= 0 {
		o.HotStock = 10_000_000
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

func (o Options) validate(t Target) error {
	for _, s := range o.Scenarios {
		if !slices.Contains(Scenarios(), s) {
			return fmt.Errorf("hotbench: unknown scenario %q (known: %s)", s, strings.Join(Scenarios(), ", "))
		}
	}
	for _, s := range o.Strategies {
		if !slices.Contains(t.Strategies(), s) {
			return fmt.Errorf("hotbench: unknown strategy %q (known: %s)", s, strings.Join(t.Strategies(), ", "))
		}
	}
	for _, c := range o.Clients {
		if c < 1 || c > ClientsMax {
			return fmt.Errorf("hotbench: clients %d out of 1..%d", c, ClientsMax)
		}
	}
	return nil
}

// ErrIncorrect is returned (wrapped) when a run oversold or failed its
// audit: the report still holds every result.
var ErrIncorrect = errors.New("hotbench: oversell or audit failure")

// Result is one (scenario, clients, strategy) run, or the commit ceiling
// (Scenario "ceiling").
type Result struct {
	Scenario    string           `json:"scenario"`
	Strategy    string           `json:"strategy"`
	Clients     int              `json:"clients"`
	Holds       int64            `json:"holds"` // granted in the measured window
	HoldsPerSec float64          `json:"holds_per_sec"`
	P50ms       float64          `json:"p50_ms"`
	P99ms       float64          `json:"p99_ms"`
	Errors      int64            `json:"errors"`
	ErrorKinds  map[string]int64 `json:"error_kinds,omitempty"`
	// Ceiling is the server's commit ceiling at Clients, measured in the
	// same run.
	Ceiling float64 `json:"ceiling"`
	// Oversold counts invariant violations found by the audit.
	Oversold int    `json:"oversold"`
	Problem  string `json:"problem,omitempty"`
	// Cost is what each hold of the window cost (known when the Target is
	// a Meter; Go CPU always).
	Cost
}

// Report is a whole run.
type Report struct {
	// Engine is the Target's engine name.
	Engine   string    `json:"engine"`
	Server   string    `json:"server"`
	Duration string    `json:"duration"`
	Results  []*Result `json:"results"`
}

// Run runs every (scenario, clients, strategy) on t and measures the
// commit ceiling at each client count. It returns the report so far with
// an error wrapping ErrIncorrect when any run oversold or failed its audit.
func Run(ctx context.Context, t Target, o Options) (*Report, error) {
	if t == nil {
		return nil, errors.New("hotbench: a Target is required")
	}
	o = o.withDefaults(t)
	if err := o.validate(t); err != nil {
		return nil, err
	}
	r := &runner{o: o, t: t}
	rep := &Report{Engine: t.Engine(), Duration: o.Duration.String()}
	var err error
	if rep.Server, err = t.Server(ctx); err != nil {
		return nil, fmt.Errorf("hotbench: %w", err)
	}
	if !o.NoLimit {
		lim, err := MeasureLimit(ctx, t, o)
		rep.Results = append(rep.Results, lim...)
		if err != nil {
			return rep, err
		}
	}
	ceilings := map[int]float64{}
	var bad []string
	for _, sc := range o.Scenarios {
		for _, clients := range o.Clients {
			if _, ok := ceilings[clients]; !ok {
				c, err := r.ceiling(ctx, clients)
				if err != nil {
					return rep, err
				}
				ceilings[clients] = c.HoldsPerSec
				rep.Results = append(rep.Results, c)
			}
			for _, st := range o.Strategies {
				res, err := r.run(ctx, sc, st, clients)
				if err != nil {
					return rep, err
				}
				res.Ceiling = ceilings[clients]
				rep.Results = append(rep.Results, res)
				if res.Oversold > 0 || res.Problem != "" {
					bad = append(bad, fmt.Sprintf("%s %s c=%d: oversold %d %s", st, sc, clients, res.Oversold, res.Problem))
				}
			}
		}
	}
	if len(bad) > 0 {
		return rep, fmt.Errorf("%w: %s", ErrIncorrect, strings.Join(bad, "; "))
	}
	return rep, nil
}

type runner struct {
	o Options
	t Target
}

// RunOne runs one (scenario, strategy, clients) on t on a fresh database
// and audits it, without the commit ceiling or the durable limit: how
// package bench runs avail on PostgreSQL beside its own hot runs.
func RunOne(ctx context.Context, t Target, o Options, scenario, strategy string, clients int) (*Result, error) {
	if t == nil {
		return nil, errors.New("hotbench: a Target is required")
	}
	o.Scenarios, o.Strategies, o.Clients = []string{scenario}, []string{strategy}, []int{clients}
	o = o.withDefaults(t)
	if err := o.validate(t); err != nil {
		return nil, err
	}
	r := &runner{o: o, t: t}
	return r.run(ctx, scenario, strategy, clients)
}

// ceilingSlack and poolSlack are the connections a ceiling's and a run's
// pool have beyond its clients (a run's: the engine's maintenance, the
// audit).
const (
	ceilingSlack = 2
	poolSlack    = 4
)

// ceiling measures the durable-commit ceiling at clients: one-row INSERTs,
// one per transaction, into a scratch table of a fresh database.
func (r *runner) ceiling(ctx context.Context, clients int) (*Result, error) {
	db, err := r.t.Database(ctx, clients+ceilingSlack)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	insert, err := db.Ceiling(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{Scenario: "ceiling", Strategy: "commit", Clients: clients}
	m := r.timed(ctx, fmt.Sprintf("ceiling    commit   c=%-3d", clients), clients, 1, insert)
	m.fill(res, r.o.Duration)
	if res.Errors > 0 {
		return nil, fmt.Errorf("hotbench: commit ceiling: %d errors %v", res.Errors, res.ErrorKinds)
	}
	return res, nil
}

// run measures strategy on scenario at clients on a fresh database, then
// audits it.
func (r *runner) run(ctx context.Context, scenario, strategy string, clients int) (*Result, error) {
	db, err := r.t.Database(ctx, clients+poolSlack)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	eng, err := db.Engine(ctx, strategy)
	if err != nil {
		return nil, err
	}
	key := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	stock := r.o.HotStock
	if _, err := eng.ChangeStock(ctx, holdfast.StockChange{Key: key, Set: &stock, Reason: "bench"}); err != nil {
		return nil, err
	}
	eng.Start(ctx)
	if scenario == ScenarioAvail {
		return r.runAvail(ctx, eng, key, strategy, clients)
	}
	lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
	// granted counts acknowledged holds (a COMMIT that answered), unknown
	// the reservations whose outcome is unknown (a failed COMMIT).
	var granted, unknown atomic.Int64
	do := func(ctx context.Context) error {
		p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: lines}
		if scenario == ScenarioHot {
			_, err := eng.Reserve(ctx, p)
			if err == nil {
				granted.Add(1)
			} else if errors.Is(err, holdfast.ErrOutcomeUnknown) {
				unknown.Add(1)
			}
			return err
		}
		lost, err := db.ReserveTx(ctx, p, r.o.TxWork)
		switch {
		case lost:
			unknown.Add(1)
		case err == nil:
			granted.Add(1)
		}
		return err
	}
	res := &Result{Scenario: scenario, Strategy: strategy, Clients: clients}
	m := r.timed(ctx, fmt.Sprintf("%-10s %-8s c=%-3d", strategy, scenario, clients), clients, 1, do)
	m.fill(res, r.o.Duration)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := eng.Stop(stopCtx); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	inv, err := eng.CheckInvariant(stopCtx)
	if err != nil {
		return nil, err
	}
	if !inv.OK() {
		res.Oversold = max(1, len(inv.Violations))
		res.Problem = inv.String()
	}
	lvl, err := eng.Level(stopCtx, key)
	if err != nil {
		return nil, err
	}
	g, u := granted.Load(), unknown.Load()
	if held := int64(lvl.Held); held < g || held > g+u {
		res.Problem = strings.TrimSpace(res.Problem + fmt.Sprintf(" audit: %d units held, %d holds acknowledged, %d of unknown outcome", held, g, u))
	}
	return res, nil
}

// measurement is what a run's clients saw in the measured window.
type measurement struct {
	ok        int64
	errors    int64
	kinds     map[string]int64
	latencies []time.Duration
	cost      Cost
	window    time.Duration // the measured window, when it outlasted the asked one
}

func (m *measurement) fill(res *Result, window time.Duration) {
	res.Holds, res.Errors, res.Cost = m.ok, m.errors, m.cost
	window = max(window, m.window)
	res.HoldsPerSec = float64(m.ok) / window.Seconds()
	if len(m.kinds) > 0 {
		res.ErrorKinds = m.kinds
	}
	slices.Sort(m.latencies)
	res.P50ms, res.P99ms = Ms(Percentile(m.latencies, 0.50)), Ms(Percentile(m.latencies, 0.99))
}

// Percentile is the nearest-rank q-quantile of sorted.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Ms is d in milliseconds, rounded to two decimals.
func Ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

// errorKind names an error for the report: a holdfast or context error,
// else the Target's name for it, else "other".
func (r *runner) errorKind(err error) string {
	for _, e := range []error{holdfast.ErrInsufficientStock, holdfast.ErrOutcomeUnknown, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if k := r.t.ErrorKind(err); k != "" {
		return k
	}
	return "other"
}

// timed runs do on clients goroutines for the warmup and then the measured
// window; attempts that start in the window count. Each successful do
// grants per holds (the durable limit's: a batch), for the cost per hold
// measured over the window.
func (r *runner) timed(ctx context.Context, label string, clients, per int, do func(context.Context) error) *measurement {
	fmt.Fprintf(r.o.Progress, "%s running %v\n", label, r.o.Duration)
	start := time.Now()
	from, to := start.Add(r.o.Warmup), start.Add(r.o.Warmup+r.o.Duration)
	meter, _ := r.t.(Meter)
	var measured atomic.Int64 // clients with an attempt measured
	var window time.Duration  // written before probed is sent
	probed := make(chan *Probe, 1)
	go func() {
		defer close(probed)
		select {
		case <-time.After(time.Until(from)):
		case <-ctx.Done():
			return
		}
		p := StartProbe(ctx, meter)
		select {
		case <-time.After(time.Until(to)):
		case <-ctx.Done():
		}
		// A window shorter than one attempt (a loaded machine, a short
		// run) would measure nothing: it lasts until every client has
		// one attempt started inside it answered.
		for measured.Load() < int64(clients) && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		p.Stop(ctx)
		window = time.Since(from) // the asked one, unless it had to wait
		probed <- p
	}()
	out := make([]*measurement, clients)
	var wg sync.WaitGroup
	for i := range clients {
		m := &measurement{kinds: map[string]int64{}}
		out[i] = m
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(to) && m.ok+m.errors > 0 {
					return
				}
				err := do(ctx)
				if t0.Before(from) {
					continue
				}
				if m.ok+m.errors == 0 {
					measured.Add(1)
				}
				if err != nil {
					m.errors++
					m.kinds[r.errorKind(err)]++
					continue
				}
				m.ok++
				m.latencies = append(m.latencies, time.Since(t0))
			}
		}()
	}
	// The probe stops at the window's end; the holds are counted once the
	// attempts in flight then have answered.
	probe := <-probed
	wg.Wait()
	all := &measurement{kinds: map[string]int64{}}
	for _, m := range out {
		all.ok += m.ok
		all.errors += m.errors
		all.latencies = append(all.latencies, m.latencies...)
		for k, v := range m.kinds {
			all.kinds[k] += v
		}
	}
	all.cost = probe.Cost(all.ok * int64(per))
	all.window = window
	return all
}

// WriteTable prints the report: per scenario and clients, the commit
// ceiling and each strategy's holds/s, latency, errors, ratios to the
// ceiling, to the counter strategy and to the durable limit on one row,
// and what each hold cost (server CPU, this process's CPU, log bytes).
func (rep *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%s engine on %s, %s per run\n", rep.Engine, rep.Server, rep.Duration)
	fmt.Fprintf(w, "%-8s %7s %-9s %10s %8s %8s %7s %8s %8s %8s %8s %9s %9s %10s\n", "scenario", "clients", "strategy", "holds/s", "p50 ms", "p99 ms", "errors", "×ceiling", "×counter", "×limit", "oversold", "db µs/h", "go µs/h", "log B/h")
	ceil := map[int]*Result{}
	limit := 0.0
	for _, r := range rep.Results {
		switch {
		case r.Scenario == "ceiling":
			ceil[r.Clients] = r
		case r.Scenario == ScenarioLimit && r.Strategy == LimitStrategy(1):
			limit = r.HoldsPerSec
		}
	}
	rows := slices.Clone(rep.Results)
	slices.SortStableFunc(rows, func(a, b *Result) int {
		return cmp.Or(cmp.Compare(order(a.Scenario), order(b.Scenario)), cmp.Compare(a.Clients, b.Clients))
	})
	counter := map[[2]any]float64{}
	for _, r := range rows {
		if r.Strategy == string(holdfast.StrategyCounter) {
			counter[[2]any{r.Scenario, r.Clients}] = r.HoldsPerSec
		}
	}
	for _, r := range rows {
		if r.Scenario == "ceiling" {
			continue
		}
		ratio := func(d float64) string {
			if d <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", r.HoldsPerSec/d)
		}
		c := 0.0
		if cr := ceil[r.Clients]; cr != nil {
			c = cr.HoldsPerSec
		}
		fmt.Fprintf(w, "%-8s %7d %-9s %10.0f %8.2f %8.2f %7d %8s %8s %8s %8d %9s %9s %10s\n", r.Scenario, r.Clients, r.Strategy, r.HoldsPerSec, r.P50ms, r.P99ms, r.Errors,
			ratio(c), ratio(counter[[2]any{r.Scenario, r.Clients}]), ratio(limit), r.Oversold, costCell(r.ServerCPUus), costCell(r.GoCPUus), costCell(r.LogBytes))
		if r.Problem != "" {
			fmt.Fprintf(w, "         PROBLEM: %s\n", r.Problem)
		}
	}
	rep.writeAvail(w)
	for _, c := range slices.Sorted(maps.Keys(ceil)) {
		fmt.Fprintf(w, "commit ceiling at %d clients: %.0f commits/s (one-row INSERT per transaction), p99 %.2f ms\n", c, ceil[c].HoldsPerSec, ceil[c].P99ms)
	}
	if limit > 0 {
		fmt.Fprintf(w, "durable limit: %d connections, each committing transactions of one counter-row decrement and %d narrow rows keyed (shop, ID), on 1 and %d counter rows (%d holds in flight; p50/p99 per transaction)\n",
			LimitConns, LimitBatch, LimitStripes, LimitConns*LimitBatch)
	}
	fmt.Fprintln(w, "db µs/h: the server's CPU per hold (all its processes); go µs/h: this process's CPU per hold (engine, driver and load generator); log B/h: WAL or redo bytes per hold")
	return nil
}

// costCell formats a per-hold cost; zero is unknown.
func costCell(v float64) string {
	if v <= 0 {
		return "-"
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// WriteJSON writes the report as JSON: {"engine", "server", "duration",
// "results": [...]}, each result with its cost per hold.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func order(scenario string) int {
	if i := slices.Index(Scenarios(), scenario); i >= 0 {
		return i
	}
	return -1
}
