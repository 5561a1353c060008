// Package bench measures holdfast's allocation strategies side by side, with
// two comparison baselines, on a real PostgreSQL server: `holdfast bench`
// and the package's Go benchmarks run through it.
//
// Every (strategy, scenario, clients) run gets a fresh database copied from
// a stocked template, warms up, measures for Options.Duration and audits the
// database at the end: any oversell fails the run. The machine's
// durable-commit ceiling (a one-row insert per transaction at the same
// client count) is measured in the same process so results read as ratios.
package bench

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/holdfast/holdfast/bench/hotbench"
)

// Options configures Run. Zero values mean the defaults.
type Options struct {
	// URL is a connection string to any database of the server to bench on.
	// Its role needs CREATEDB: every run gets its own database. Required.
	URL string
	// Scenarios and Strategies select what runs. Default to all.
	Scenarios  []string
	Strategies []string
	// Clients are the concurrency levels. Default to 1, 8, 32, 64. The
	// soldout scenario always runs at SoldoutClients.
	Clients []int
	// Duration is the measured time per run. Defaults to 5 seconds.
	Duration time.Duration
	// Attempts, when positive, makes every run a fixed amount of work
	// instead of a time window: each client makes Attempts attempts, all
	// measured, with no warmup, and rates are over the time they took
	// (the commit ceiling too). Zero means time-based runs of Duration.
	// Tests use it so that their verdict does not depend on how much time
	// a loaded machine gives them.
	Attempts int
	// Warmup runs before each measurement. Defaults to Duration/5, at most
	// one second.
	Warmup time.Duration
	// TxWork is the simulated checkout work inside each hot-tx transaction.
	// Defaults to 5ms.
	TxWork time.Duration
	// HotStock is the stock of each hot and cart key: large enough that
	// they never run out. Defaults to 10,000,000.
	HotStock int
	// SpreadKeys is the spread scenario's key count. Defaults to 10,000.
	SpreadKeys int
	// SpreadStock is the stock of each spread key. Defaults to 50 (the pool
	// strategy buffers one row per unit).
	SpreadStock int
	// CartKeys is the cart scenario's hot key count. Defaults to 50.
	CartKeys int
	// SoldoutClients, SoldoutAttempts and SoldoutUnits shape soldout:
	// clients x attempts racing for units. Default to 64, 20 and 50.
	SoldoutClients  int
	SoldoutAttempts int
	SoldoutUnits    int
	// WaitSample is how often pg_stat_activity is sampled during a run.
	// Defaults to 50ms.
	WaitSample time.Duration
	// Progress receives the bench's progress. On a terminal it is one live
	// line redrawn in place; on anything else (a log, a pipe) plain lines,
	// at most one per ProgressEvery, with no terminal escapes. Nil is
	// silent.
	Progress io.Writer
	// ProgressEvery is how often plain progress lines are written when
	// Progress is not a terminal. Defaults to 5 seconds.
	ProgressEvery time.Duration
	// Logger receives the engine's logs. Defaults to discarding them.
	Logger *slog.Logger
	// NoLimit skips the durable limit (hotbench.MeasureLimit), which Run
	// otherwise measures once, before the other runs, for Duration each
	// (runs of fixed Attempts skip it: it is a timed run).
	NoLimit bool
}

// AttemptsMax bounds Options.Attempts and SoakOptions.Attempts.
const AttemptsMax = 1_000_000

func (o Options) withDefaults() Options {
	if len(o.Scenarios) == 0 {
		o.Scenarios = Scenarios()
	}
	if len(o.Strategies) == 0 {
		o.Strategies = Strategies()
	}
	if len(o.Clients) == 0 {
		o.Clients = []int{1, 8, 32, 64}
	}
	if o.Duration == 0 {
		o.Duration = 5 * time.Second
	}
	if o.Warmup == 0 {
		o.Warmup = min(o.Duration/5, time.Second)
	}
	if o.TxWork == 0 {
		o.TxWork = 5 * time.Millisecond
	}
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.HotStock, 10_000_000)
	def(&o.SpreadKeys, 10_000)
	def(&o.SpreadStock, 50)
	def(&o.CartKeys, 50)
	def(&o.SoldoutClients, 64)
	def(&o.SoldoutAttempts, 20)
	def(&o.SoldoutUnits, 50)
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 5 * time.Second
	}
	if o.WaitSample == 0 {
		o.WaitSample = 50 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
	if o.URL == "" {
		return errors.New("bench: Options.URL is required")
	}
	for _, c := range o.Clients {
		if c < 1 || c > 1000 {
			return fmt.Errorf("bench: clients must be between 1 and 1000, got %d", c)
		}
	}
	if o.Duration < 0 || o.Warmup < 0 || o.TxWork < 0 {
		return errors.New("bench: durations must not be negative")
	}
	if o.Attempts < 0 || o.Attempts > AttemptsMax {
		return fmt.Errorf("bench: attempts must be between 0 and %d, got %d", AttemptsMax, o.Attempts)
	}
	if o.CartKeys < 5 {
		return errors.New("bench: CartKeys must be at least 5")
	}
	seen := map[string]bool{}
	for _, s := range o.Strategies {
		if seen[s] {
			return fmt.Errorf("bench: strategy %q named twice", s)
		}
		seen[s] = true
		if !IsEngine(s) && s != "pessimistic" && s != "optimistic" {
			return fmt.Errorf("bench: unknown strategy %q (known: %v)", s, Strategies())
		}
	}
	for _, s := range o.Scenarios {
		if _, err := newScenario(s, &o); err != nil {
			return err
		}
	}
	return nil
}

// Result is one (strategy, scenario, clients) run.
type Result struct {
	Strategy string `json:"strategy"`
	Scenario string `json:"scenario"`
	Clients  int    `json:"clients"`
	// HoldsPerSec is successful reservations per second of the measured
	// window (soldout: over the time to answer every attempt).
	HoldsPerSec float64 `json:"holds_per_sec"`
	// Latencies of every attempt in the window, successful or not.
	P50ms float64 `json:"p50_ms"`
	P95ms float64 `json:"p95_ms"`
	P99ms float64 `json:"p99_ms"`
	Maxms float64 `json:"max_ms"`
	// Holds and SoldOut count attempts in the window; Errors are attempts
	// that failed otherwise, ErrorsByCode by SQLSTATE or holdfast error.
	Holds        int64            `json:"holds"`
	SoldOut      int64            `json:"sold_out"`
	Errors       int64            `json:"errors"`
	ErrorsByCode map[string]int64 `json:"errors_by_code,omitempty"`
	// Retries are transactions run again inside the strategy (whole run),
	// by SQLSTATE ("version_conflict" for the optimistic baseline).
	Retries       int64            `json:"retries"`
	RetriesByCode map[string]int64 `json:"retries_by_code,omitempty"`
	// InlineRefills are the engine's buyer-path buffer refills.
	InlineRefills int64 `json:"inline_refills"`
	// DeadTuples is the change of n_dead_tup over the tables a reservation
	// writes; DeadCreated the row versions the run made dead (updates +
	// deletes), which vacuum cannot hide.
	DeadTuples  int64 `json:"dead_tuples"`
	DeadCreated int64 `json:"dead_created"`
	// Oversold is units held beyond stock; anything but 0 fails the bench.
	Oversold int64 `json:"oversold"`
	// Problem describes any failed check (oversell, an invariant defect,
	// holds that do not match the confirmed reservations, soldout not
	// selling exactly its stock). Empty when the run is correct.
	Problem string `json:"problem,omitempty"`
	// HeldUnits is units held at the end; Confirmed the units of every
	// reservation reported successful (warmup included).
	HeldUnits int64 `json:"held_units"`
	Confirmed int64 `json:"confirmed_units"`
	// CommitCeiling is the one-row-insert commits/s at the same client
	// count, measured in the same bench.
	CommitCeiling float64 `json:"commit_ceiling_per_sec"`
	// ElapsedMs is, for soldout and for runs of Options.Attempts, the time
	// to answer every attempt.
	ElapsedMs float64 `json:"elapsed_ms,omitempty"`
	// Waits is the average number of the run database's busy backends per
	// wait event ("CPU" when none), sampled during the window.
	Waits map[string]float64 `json:"waits,omitempty"`
	// GoCPU, PgCPU and OtherCPU are the shares of the machine's CPU (all
	// cores = 100) used in the window by this process, by the run
	// database's backends (when the server is local), and by everything
	// else (PostgreSQL's WAL writer and checkpointer, other processes).
	GoCPU    float64 `json:"go_cpu_pct"`
	PgCPU    float64 `json:"pg_cpu_pct"`
	OtherCPU float64 `json:"other_cpu_pct"`
	// Cost is what each hold of the window cost: the whole server's CPU
	// (when local), this process's CPU and the WAL bytes. Soldout and
	// counted runs divide by every hold of the run.
	hotbench.Cost
	// BackendCPUus is the CPU µs per hold of the run database's backends
	// alone (the part of ServerCPUus spent serving the holds' statements).
	BackendCPUus float64 `json:"backend_cpu_us_per_hold,omitempty"`
}

// Failed reports whether the run failed a correctness check.
func (r *Result) Failed() bool { return r.Oversold != 0 || r.Problem != "" }

// Report is the outcome of Run.
type Report struct {
	Runs []Result `json:"runs"`
	// Ceilings are the commit ceilings by client count.
	Ceilings map[int]float64 `json:"commit_ceilings"`
	// Duration is the measured time per run, or empty when runs were a
	// fixed number of Attempts per client.
	Duration string `json:"duration"`
	Attempts int    `json:"attempts,omitempty"`
	TxWork   string `json:"tx_work"`
	Elapsed  string `json:"elapsed"`
	// LoadBefore and LoadAfter are the machine's load averages (1, 5, 15
	// minutes) when the bench started and ended: a busy machine skews
	// every figure.
	LoadBefore string `json:"load_before,omitempty"`
	LoadAfter  string `json:"load_after,omitempty"`
	// Limits is the durable limit measured in the same run, on one counter
	// row and on hotbench.LimitStripes (hotbench.MeasureLimit).
	Limits []*hotbench.Result `json:"durable_limits,omitempty"`
}

// ErrIncorrect is returned by Run (wrapped) when any run oversold or failed
// its audit. The report is complete nevertheless.
var ErrIncorrect = errors.New("bench: a strategy failed its correctness audit")
