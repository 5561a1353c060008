package httpbench

import (
	"bufio"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = sqltext.Load("httpbench", sqlFiles, "sql")

// SoakDurationDefault is a service soak's length unless SoakOptions says
// (issue #15: one hour).
const SoakDurationDefault = time.Hour

// SoakTarget is the least LastVsFirst a soak meets.
const SoakTarget = 0.90

// SoakOptions shape Soak. The zero value is the one-hour soak, sampled
// every minute.
type SoakOptions struct {
	// Duration of the soak. Defaults to SoakDurationDefault.
	Duration time.Duration
	// Interval between samples. Defaults to a minute, or Duration/60 when
	// that is shorter.
	Interval time.Duration
	// Samples and Answers, both positive, make the soak a fixed amount of
	// work instead of Duration: Samples samples, each ending when the
	// clients together have had Answers answers. The windows are then the
	// first and last sixth of the samples.
	Samples, Answers int
	// TTL is each hold's TTL. Defaults to SoakTTLDefault.
	TTL time.Duration
	// Rows, when not nil, receives the table's header and each row as its
	// sample is taken.
	Rows io.Writer
}

// SoakTTLDefault is a service soak's hold TTL: short, so that from its
// second minute the sweeper expires holds as fast as they are made and
// every sample (the first window's included) measures that steady state.
// With the service's default (15 minutes) the first quarter of an hour
// would have no expiries to do, and last ÷ first would measure the
// sweeper's share, not a slowdown over time.
const SoakTTLDefault = time.Minute

// SoakAnswersMax bounds SoakOptions.Samples × Answers.
const SoakAnswersMax = 100_000_000

// SoakSample is one sample of a service soak: the load's figures over the
// interval that ends at At, and the serve process, machine and database
// as they are at At.
type SoakSample struct {
	// At is the time since the measurement began; Seconds the sample's
	// length.
	At      string  `json:"at"`
	Seconds float64 `json:"seconds"`
	// Holds is the number of 201 answers in the sample, HoldsPerSec their
	// rate, P50ms and P99ms their latency percentiles.
	Holds       int64   `json:"holds"`
	HoldsPerSec float64 `json:"holds_per_sec"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	// Other counts the answers that were not 201, by status ("503",
	// "transport" for no answer).
	Other map[string]int64 `json:"other,omitempty"`
	// ServeRSSKiB is serve's resident set (VmRSS); 0 when unreadable.
	ServeRSSKiB int64 `json:"serve_rss_kib"`
	// Load1 is the machine's one-minute load average, to judge outside
	// load by.
	Load1 float64 `json:"load1"`
	// Held is the holds with status 'held' (expired ones the sweeper has
	// not taken yet included); UnsweptSec the age of the oldest expiry not
	// swept yet (0 when none); HoldsBytes the holds table's total size.
	Held       int64   `json:"held"`
	UnsweptSec float64 `json:"unswept_sec"`
	HoldsBytes int64   `json:"holds_bytes"`
	// SampleMs is how long the database sample took: the bench's own
	// load on the database, to judge the figures by.
	SampleMs float64 `json:"db_sample_ms"`
}

// SoakReport is a service soak's result.
type SoakReport struct {
	Clients int `json:"clients"`
	// TTL is the holds' TTL.
	TTL string `json:"ttl"`
	// Duration is the time-based soak's length; empty for a count-based
	// one.
	Duration string       `json:"duration,omitempty"`
	Samples  []SoakSample `json:"samples"`
	// Window is how many samples each end's mean is over: those of the
	// first and the last 10 minutes, or of the first and last sixth when
	// the soak is shorter than 30 minutes or count-based.
	Window int `json:"window"`
	// FirstPerSec and LastPerSec are the two windows' mean holds/s.
	FirstPerSec float64 `json:"first_per_sec"`
	LastPerSec  float64 `json:"last_per_sec"`
	// LastVsFirst is the last window's holds/s over the first's.
	LastVsFirst float64 `json:"last_vs_first"`
	// P99ms is over the whole soak, to 1% (a histogram: bounded memory
	// whatever the length).
	P99ms float64 `json:"p99_ms"`
	// Other counts the non-201 answers of the whole soak by status.
	Other map[string]int64 `json:"other,omitempty"`
	// Invariant is postgres.Client.CheckInvariant's summary at the end;
	// Oversold the units held beyond stock on its violating keys.
	Invariant   string `json:"invariant"`
	InvariantOK bool   `json:"invariant_ok"`
	Oversold    int64  `json:"oversold"`
	// Met: LastVsFirst >= SoakTarget and the invariant holds.
	Met bool `json:"met"`
}

// Refused is how many answers of the soak were 503.
func (r *SoakReport) Refused() int64 { return r.Other["503"] }

// Soak runs the hot scenario through a real `holdfast serve` (as Run's
// service side: its own process, the same database, one key, o.Clients
// clients, distinct checkouts, quantity 1, holds of so.TTL so that they
// expire and the sweeper works as in production) for so.Duration, taking a
// SoakSample every so.Interval, and ends with the engine's invariant check.
// o.Duration and o.Fairness are not used. A soak that misses its target
// returns its report with Met false and no error.
func Soak(ctx context.Context, o Options, so SoakOptions) (*SoakReport, error) {
	o = o.withDefaults()
	if o.DatabaseURL == "" {
		return nil, errors.New("httpbench: Options.DatabaseURL is required")
	}
	counted := so.Samples > 0 || so.Answers > 0
	switch {
	case counted && (so.Samples <= 0 || so.Answers <= 0 || int64(so.Samples)*int64(so.Answers) > SoakAnswersMax):
		return nil, fmt.Errorf("httpbench: soak samples and answers must both be positive, their product at most %d", SoakAnswersMax)
	case so.Duration < 0 || so.Interval < 0:
		return nil, errors.New("httpbench: soak durations must not be negative")
	}
	if so.Duration == 0 {
		so.Duration = SoakDurationDefault
	}
	if so.Interval == 0 {
		so.Interval = min(time.Minute, so.Duration/60)
	}
	if so.Rows == nil {
		so.Rows = io.Discard
	}
	if so.TTL == 0 {
		so.TTL = SoakTTLDefault
	}
	if so.TTL < holdfast.HoldTTLMin || so.TTL > time.Hour || so.TTL%time.Second != 0 {
		return nil, fmt.Errorf("httpbench: soak TTL %v: want whole seconds from %v to 1h (the API's ttl_seconds)", so.TTL, holdfast.HoldTTLMin)
	}
	// A small pool of its own for the samples and the check: serve has
	// the database's load.
	pcfg, err := pgxpool.ParseConfig(o.DatabaseURL)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return nil, err
	}
	srv, client, key, err := startService(ctx, o)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	rep := &SoakReport{Clients: o.Clients, TTL: so.TTL.String(), Other: map[string]int64{}}
	if counted {
		fmt.Fprintf(o.Log, "service soak: hot, %d clients, holds of %v, %d samples of %d answers, %s\n", o.Clients, so.TTL, so.Samples, so.Answers, srv.url)
	} else {
		rep.Duration = so.Duration.String()
		fmt.Fprintf(o.Log, "service soak: hot, %d clients, holds of %v, %v sampled every %v, %s\n", o.Clients, so.TTL, so.Duration, so.Interval, srv.url)
	}
	l := startLoad(ctx, o.Clients, reserverTTL(client, srv.url, key, 2, int(so.TTL/time.Second)))
	wait(ctx, o.Warmup)
	l.collect("warmup") // discarded
	begin := time.Now()
	var all latencyHistogram
	writeSoakHeader(so.Rows)
	for i := 0; ; i++ {
		if counted {
			if i == so.Samples {
				break
			}
			l.waitAnswers(ctx, int64(so.Answers))
		} else {
			left := so.Duration - time.Since(begin)
			if left <= so.Interval/10 { // a sliver is no sample
				break
			}
			wait(ctx, min(so.Interval, left))
		}
		if ctx.Err() != nil {
			break
		}
		side, lat, took := l.take("service")
		s := sampleOf(side, time.Since(begin), took)
		for st, n := range side.Statuses {
			if st != "201" {
				rep.Other[st] += n
			}
		}
		all.add(lat)
		s.ServeRSSKiB = rssKiB(srv.cmd.Process.Pid)
		s.Load1 = load1()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		asked := time.Now()
		err := pool.QueryRow(sctx, statements.Get("soak_sample")).Scan(&s.Held, &s.UnsweptSec, &s.HoldsBytes)
		s.SampleMs = ms(time.Since(asked))
		cancel()
		if err != nil {
			fmt.Fprintf(o.Log, "service soak: database sample: %v\n", err)
		}
		rep.Samples = append(rep.Samples, s)
		writeSoakRow(so.Rows, s)
	}
	l.stop()
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	rep.P99ms = ms(all.quantile(0.99))
	rep.window(counted, so)

	fmt.Fprintf(o.Log, "service soak: checking the invariant over the whole database\n")
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		return rep, err
	}
	inv, err := hc.CheckInvariant(ctx)
	if err != nil {
		return rep, fmt.Errorf("httpbench: invariant check: %w", err)
	}
	rep.Invariant, rep.InvariantOK = inv.String(), inv.OK()
	for _, a := range inv.Violations {
		rep.Oversold += max(0, a.Held+a.Pooled-a.Available)
	}
	rep.Met = rep.LastVsFirst >= SoakTarget && rep.InvariantOK
	return rep, nil
}

// window sets Window, the two means and LastVsFirst.
func (r *SoakReport) window(counted bool, so SoakOptions) {
	n := len(r.Samples)
	if n == 0 {
		return
	}
	w := n / 6
	if !counted {
		span := so.Duration / 6
		if so.Duration >= 30*time.Minute {
			span = 10 * time.Minute
		}
		w = int(math.Round(float64(span) / float64(so.Interval)))
	}
	w = min(max(1, w), n)
	mean := func(ss []SoakSample) float64 {
		var holds int64
		var secs float64
		for _, s := range ss {
			holds, secs = holds+s.Holds, secs+s.Seconds
		}
		if secs == 0 {
			return 0
		}
		return float64(holds) / secs
	}
	r.Window = w
	r.FirstPerSec, r.LastPerSec = mean(r.Samples[:w]), mean(r.Samples[n-w:])
	if r.FirstPerSec > 0 {
		r.LastVsFirst = r.LastPerSec / r.FirstPerSec
	}
}

func sampleOf(s Side, at, took time.Duration) SoakSample {
	step := time.Second
	if at < 10*time.Second {
		step = time.Millisecond
	}
	out := SoakSample{At: at.Round(step).String(), Holds: s.Ops, HoldsPerSec: s.PerSec, P50ms: ms(s.P50), P99ms: ms(s.P99), Seconds: took.Seconds()}
	for st, n := range s.Statuses {
		if st != "201" {
			if out.Other == nil {
				out.Other = map[string]int64{}
			}
			out.Other[st] = n
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// rssKiB is the process's VmRSS from /proc (Linux); 0 when unreadable.
func rssKiB(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// load1 is the one-minute load average from /proc/loadavg; 0 when
// unreadable.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// latencyHistogram counts latencies in buckets about 1% wide, so a soak of
// any length keeps its whole-run percentiles in bounded memory.
type latencyHistogram [histBuckets]int64

// histBuckets covers 1µs to beyond a minute at 1.01 per bucket.
const histBuckets = 1900

func histBucket(d time.Duration) int {
	us := max(1, d.Microseconds())
	return min(histBuckets-1, int(math.Log(float64(us))/math.Log(1.01)))
}

func (h *latencyHistogram) add(lat []time.Duration) {
	for _, d := range lat {
		h[histBucket(d)]++
	}
}

// quantile is the bucket's upper bound under which q of the latencies are.
func (h *latencyHistogram) quantile(q float64) time.Duration {
	var total int64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0
	}
	want := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i, n := range h {
		if seen += n; seen >= want {
			return time.Duration(math.Pow(1.01, float64(i+1))) * time.Microsecond
		}
	}
	return 0
}

// WriteJSON writes the report as JSON.
func (r *SoakReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the samples and the verdict.
func (r *SoakReport) WriteTable(w io.Writer) error {
	writeSoakHeader(w)
	for _, s := range r.Samples {
		writeSoakRow(w, s)
	}
	return r.WriteVerdict(w)
}

const soakRow = "%8s %8s %8s %8s %7s %6s %9s %9s %9s  %s\n"

func writeSoakHeader(w io.Writer) {
	fmt.Fprintf(w, soakRow, "at", "holds/s", "p50 ms", "p99 ms", "rss MiB", "load1", "held", "unswept s", "holds MiB", "not 201")
}

func writeSoakRow(w io.Writer, s SoakSample) {
	other := "-"
	if len(s.Other) > 0 {
		var parts []string
		for _, st := range slices.Sorted(maps.Keys(s.Other)) {
			parts = append(parts, fmt.Sprintf("%s:%d", st, s.Other[st]))
		}
		other = strings.Join(parts, " ")
	}
	fmt.Fprintf(w, soakRow, s.At, fmt.Sprintf("%.0f", s.HoldsPerSec), fmt.Sprintf("%.2f", s.P50ms), fmt.Sprintf("%.2f", s.P99ms),
		fmt.Sprintf("%.0f", float64(s.ServeRSSKiB)/1024), fmt.Sprintf("%.2f", s.Load1), fmt.Sprint(s.Held),
		fmt.Sprintf("%.1f", s.UnsweptSec), fmt.Sprintf("%.1f", float64(s.HoldsBytes)/(1<<20)), other)
}

// WriteVerdict writes the verdict line.
func (r *SoakReport) WriteVerdict(w io.Writer) error {
	verdict := "MET"
	if !r.Met {
		verdict = "NOT MET"
	}
	_, err := fmt.Fprintf(w, "last/first holds/s %.2f (%.0f/%.0f, %d samples each; target >= %.2f), p99 %.2f ms, 503s %d, other non-201 %d, oversold %d, invariant: %s: %s\n",
		r.LastVsFirst, r.LastPerSec, r.FirstPerSec, r.Window, SoakTarget, r.P99ms, r.Refused(), r.nonCreated()-r.Refused(), r.Oversold, r.Invariant, verdict)
	return err
}

func (r *SoakReport) nonCreated() int64 {
	var n int64
	for _, v := range r.Other {
		n += v
	}
	return n
}
