package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// SoakOptions shapes Soak.
type SoakOptions struct {
	// Duration of the soak. Defaults to 10 minutes.
	Duration time.Duration
	// Interval between samples. Defaults to one minute.
	Interval time.Duration
	// Clients defaults to 64.
	Clients int
	// Attempts, when positive, makes the soak a fixed amount of work
	// instead of Duration: Intervals intervals, each ending when the
	// clients together have made Attempts attempts per client. Zero means
	// a time-based soak (Duration, Interval).
	Attempts int
	// Intervals is how many intervals a soak of Attempts samples. Defaults
	// to 10.
	Intervals int
}

// SoakInterval is one sample of a soak.
type SoakInterval struct {
	// End is the time since the measurement began.
	End         string  `json:"end"`
	HoldsPerSec float64 `json:"holds_per_sec"`
	// UnitsPartition is the reservation_units partition with the largest
	// dead-tuple share, and UnitsDeadPct that share in percent (the soak
	// target). Only the pool strategy writes reservation_units.
	UnitsPartition string  `json:"units_partition"`
	UnitsDeadPct   float64 `json:"units_dead_pct"`
	// BusiestTable is, among all tables a reservation writes, the one with
	// the largest dead-tuple share, and DeadPct that share (a one-row
	// counter table shows a high share of a tiny count).
	BusiestTable string  `json:"busiest_table"`
	DeadPct      float64 `json:"dead_pct"`
}

// SoakReport is the outcome of Soak.
type SoakReport struct {
	Strategy  string         `json:"strategy"`
	Clients   int            `json:"clients"`
	Intervals []SoakInterval `json:"intervals"`
	Result    Result         `json:"result"`
	// LastVsFirst is the last interval's throughput over the first's.
	LastVsFirst float64 `json:"last_vs_first"`
	MaxDeadPct  float64 `json:"max_dead_pct"`
	// Met: last interval within 10% of the first, no reservation_units
	// partition above 20% dead.
	Met bool `json:"met"`
}

// Soak runs the hot scenario at so.Clients for so.Duration on the best
// strategy — the only one in o.Strategies, or the engine strategy with the
// most holds/s in a hot run of o.Duration at so.Clients — sampling
// throughput and dead tuples every so.Interval. The run is audited like any
// other; an incorrect one returns an error wrapping ErrIncorrect.
func Soak(ctx context.Context, o Options, so SoakOptions) (*SoakReport, error) {
	if so.Duration == 0 {
		so.Duration = 10 * time.Minute
	}
	if so.Interval == 0 {
		so.Interval = time.Minute
	}
	if so.Clients == 0 {
		so.Clients = 64
	}
	if so.Intervals == 0 {
		so.Intervals = 10
	}
	if so.Attempts < 0 || so.Intervals < 0 || int64(so.Attempts)*int64(so.Intervals) > AttemptsMax {
		return nil, fmt.Errorf("bench: soak attempts x intervals must be between 0 and %d", AttemptsMax)
	}
	o.Scenarios = []string{ScenarioHot}
	o.Clients = []int{so.Clients}
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	r, err := newRunner(ctx, o)
	if err != nil {
		return nil, err
	}
	defer r.close()
	defer r.progressDone()
	sc, _ := newScenario(ScenarioHot, &o)
	best := o.Strategies[0]
	if len(o.Strategies) > 1 {
		bestRate := -1.0
		for _, s := range o.Strategies {
			if !IsEngine(s) {
				continue
			}
			res, err := r.run(ctx, s, sc, so.Clients)
			if err != nil {
				return nil, err
			}
			if res.Failed() {
				return nil, fmt.Errorf("%w: %s: %s", ErrIncorrect, s, res.Problem)
			}
			if res.HoldsPerSec > bestRate {
				best, bestRate = s, res.HoldsPerSec
			}
		}
	}
	rep := &SoakReport{Strategy: best, Clients: so.Clients}
	// The soak itself: run's steps with a sampling tick.
	var statsPool *pgxpool.Pool
	var tables []string
	last, lastAt := int64(0), time.Duration(0)
	r.onRun = func(pool *pgxpool.Pool, rs reserver) { statsPool, tables = pool, rs.tables() }
	if so.Attempts > 0 {
		r.attempts, r.tickAttempts = so.Attempts*so.Intervals, so.Attempts
	} else {
		r.tick, r.window = so.Interval, so.Duration
	}
	r.onTick = func(holds int64, at time.Duration) {
		step := time.Second
		if at < 10*time.Second {
			step = time.Millisecond
		}
		iv := SoakInterval{End: at.Round(step).String()}
		if at > lastAt {
			iv.HoldsPerSec = float64(holds-last) / (at - lastAt).Seconds()
		}
		last, lastAt = holds, at
		if statsPool != nil {
			iv.BusiestTable, iv.DeadPct = busiest(ctx, statsPool, tables)
			iv.UnitsPartition, iv.UnitsDeadPct = busiest(ctx, statsPool, []string{`reservation\_units\_p%`})
		}
		rep.Intervals = append(rep.Intervals, iv)
	}
	res, err := r.run(ctx, best, sc, so.Clients)
	if err != nil {
		return nil, err
	}
	rep.Result = *res
	ivs := rep.Intervals
	if n := len(ivs); n > 1 && ivs[0].HoldsPerSec > 0 {
		rep.LastVsFirst = ivs[n-1].HoldsPerSec / ivs[0].HoldsPerSec
	}
	for _, iv := range ivs {
		rep.MaxDeadPct = max(rep.MaxDeadPct, iv.UnitsDeadPct)
	}
	rep.Met = rep.LastVsFirst >= 0.9 && rep.MaxDeadPct <= 20 && !res.Failed()
	if res.Failed() {
		return rep, fmt.Errorf("%w: %s: %s", ErrIncorrect, best, res.Problem)
	}
	return rep, nil
}

// busiest returns the table matching patterns with the largest dead-tuple
// share and that share in percent; "" when none has any rows.
func busiest(ctx context.Context, pool *pgxpool.Pool, patterns []string) (string, float64) {
	var name string
	var live, dead int64
	if err := pool.QueryRow(ctx, query("stats_busiest"), patterns).Scan(&name, &live, &dead); err != nil || live+dead == 0 {
		return "", 0
	}
	return name, float64(1000*dead/(live+dead)) / 10
}

// WriteJSON writes the soak report as JSON.
func (rep *SoakReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteTable writes the soak's intervals and verdict.
func (rep *SoakReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "soak: hot, %d clients, strategy %s\n", rep.Clients, rep.Strategy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "at\tholds/s\tbusiest reservation_units partition\tdead %\tbusiest table\tdead %\t")
	for _, iv := range rep.Intervals {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.1f\t%s\t%.1f\t\n", iv.End, iv.HoldsPerSec, orDash(iv.UnitsPartition), iv.UnitsDeadPct, orDash(iv.BusiestTable), iv.DeadPct)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "MET"
	if !rep.Met {
		verdict = "NOT MET"
	}
	fmt.Fprintf(w, "last/first throughput %.2f (target >= 0.90), max reservation_units partition dead %.1f%% (target <= 20%%), p99 %.1f ms, oversold %d: %s\n",
		rep.LastVsFirst, rep.MaxDeadPct, rep.Result.P99ms, rep.Result.Oversold, verdict)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
