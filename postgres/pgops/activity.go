package pgops

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast/internal/maint"
)

// Bounds of the activity sampler.
const (
	// SessionsMax bounds the sessions one sample reads.
	SessionsMax = 10_000
	// SeriesMaxDefault bounds the distinct (application, route, tag, state)
	// series the sampler keeps; later ones are counted under route and tag
	// "other".
	SeriesMaxDefault = 1000
)

// States of pg_stat_activity that matter to the sampler.
const (
	StateActive            = "active"
	StateIdle              = "idle"
	StateIdleInTransaction = "idle in transaction"
	StateIdleAborted       = "idle in transaction (aborted)"
)

// Session is one client backend as one sample saw it.
type Session struct {
	PID         int32  `json:"pid"`
	Database    string `json:"database"`
	Application string `json:"application"`
	// Route and Tag come from the sqlcommenter comment of the session's
	// current (or, when idle, last) statement.
	Route string `json:"route"`
	Tag   string `json:"tag"`
	State string `json:"state"`
	Query string `json:"query"`
	// InTransaction is true when a transaction is open; XactAge is its age.
	InTransaction bool          `json:"in_transaction"`
	XactAge       time.Duration `json:"xact_age"`
	// StateAge is how long the session has been in State.
	StateAge      time.Duration `json:"state_age"`
	StateChange   time.Time     `json:"state_change"`
	WaitEventType string        `json:"wait_event_type,omitempty"`
	WaitEvent     string        `json:"wait_event,omitempty"`
	// XminAge is the age in transaction IDs of the snapshot the session
	// holds (0 for none): how far it holds back vacuum.
	XminAge int64 `json:"xmin_age"`
}

// Caller is the attribution of a session: who holds the connection and on
// behalf of which business process.
type Caller struct {
	Application string `json:"application"`
	Route       string `json:"route"`
	Tag         string `json:"tag"`
	State       string `json:"state"`
}

// Caller attributes the session. An idle session (no transaction) is held
// by its pool, not by a business process: its route is "none".
func (s Session) Caller() Caller {
	c := Caller{Application: s.Application, Route: s.Route, Tag: s.Tag, State: s.State}
	if c.Application == "" {
		c.Application = "untagged"
	}
	if c.State == "" {
		c.State = "unknown"
	}
	if c.Route == "" || c.State == StateIdle {
		c.Route = "none"
	}
	if c.State == StateIdle {
		c.Tag = ""
	}
	return c
}

// Sessions reads the client sessions of q's database (every database when
// all), at most SessionsMax.
func Sessions(ctx context.Context, q Querier, all bool) ([]Session, error) {
	rows, err := q.Query(ctx, statement("sessions"), SessionsMax, all)
	if err != nil {
		return nil, fmt.Errorf("ops: read pg_stat_activity: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Session, error) {
		var s Session
		var xact, state float64
		err := row.Scan(&s.PID, &s.Application, &s.State, &s.Query, &s.InTransaction, &xact, &state,
			&s.StateChange, &s.WaitEventType, &s.WaitEvent, &s.XminAge, &s.Database)
		s.XactAge = seconds(xact)
		s.StateAge = seconds(state)
		c := ParseComment(s.Query)
		s.Route, s.Tag = c.Route, c.Tag
		return s, err
	})
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// DatabaseCounters are pg_stat_database's transaction counters for one
// database since StatsReset.
type DatabaseCounters struct {
	Commits    int64     `json:"commits"`
	Rollbacks  int64     `json:"rollbacks"`
	Deadlocks  int64     `json:"deadlocks"`
	StatsReset time.Time `json:"stats_reset"`
}

// ReadDatabaseCounters reads q's database's transaction counters.
func ReadDatabaseCounters(ctx context.Context, q Querier) (DatabaseCounters, error) {
	var d DatabaseCounters
	err := q.QueryRow(ctx, statement("database_stats")).Scan(&d.Commits, &d.Rollbacks, &d.Deadlocks, &d.StatsReset)
	if err != nil {
		return d, fmt.Errorf("ops: read pg_stat_database: %w", err)
	}
	return d, nil
}

// CallerCount is the sessions of one caller in one sample.
type CallerCount struct {
	Caller
	Sessions int `json:"sessions"`
}

// WaitCount is the active sessions waiting on one wait event.
type WaitCount struct {
	Type     string `json:"type"`
	Event    string `json:"event"`
	Sessions int    `json:"sessions"`
}

// Activity is one sample of pg_stat_activity.
type Activity struct {
	At       time.Time     `json:"at"`
	Sessions []Session     `json:"sessions"`
	Callers  []CallerCount `json:"callers"`
	// Oldest is the session with the oldest open transaction, nil for none.
	Oldest *Session `json:"oldest,omitempty"`
	// IdleInTransaction are the sessions idle inside a transaction
	// (aborted ones included), longest first.
	IdleInTransaction []Session        `json:"idle_in_transaction"`
	Waits             []WaitCount      `json:"waits"`
	Database          DatabaseCounters `json:"database"`
}

// Summarize groups sessions into an Activity.
func Summarize(at time.Time, sessions []Session) *Activity {
	a := &Activity{At: at, Sessions: sessions}
	callers := map[Caller]int{}
	waits := map[[2]string]int{}
	for i := range sessions {
		s := &sessions[i]
		callers[s.Caller()]++
		if s.InTransaction && (a.Oldest == nil || s.XactAge > a.Oldest.XactAge) {
			a.Oldest = s
		}
		if s.State == StateIdleInTransaction || s.State == StateIdleAborted {
			a.IdleInTransaction = append(a.IdleInTransaction, *s)
		}
		if s.State == StateActive && s.WaitEventType != "" {
			waits[[2]string{s.WaitEventType, s.WaitEvent}]++
		}
	}
	for c, n := range callers {
		a.Callers = append(a.Callers, CallerCount{c, n})
	}
	slices.SortFunc(a.Callers, func(x, y CallerCount) int {
		return cmp.Or(y.Sessions-x.Sessions, cmp.Compare(x.Application, y.Application),
			cmp.Compare(x.Route, y.Route), cmp.Compare(x.Tag, y.Tag), cmp.Compare(x.State, y.State))
	})
	slices.SortFunc(a.IdleInTransaction, func(x, y Session) int { return cmp.Compare(y.StateAge, x.StateAge) })
	for w, n := range waits {
		a.Waits = append(a.Waits, WaitCount{w[0], w[1], n})
	}
	slices.SortFunc(a.Waits, func(x, y WaitCount) int {
		return cmp.Or(y.Sessions-x.Sessions, cmp.Compare(x.Type, y.Type), cmp.Compare(x.Event, y.Event))
	})
	return a
}

// SamplerConfig configures a Sampler. The zero value of every field means
// its default.
type SamplerConfig struct {
	// Interval between samples. Every session seen in a sample counts as
	// holding its connection for one Interval. Defaults to 1 second.
	Interval time.Duration
	// IdleInTransactionLog: a session idle in a transaction for longer is
	// logged (once per idle spell). Defaults to 5 seconds.
	IdleInTransactionLog time.Duration
	// AllDatabases samples every database's sessions, not only the pool's.
	AllDatabases bool
	// SeriesMax bounds the connection-seconds series kept. Defaults to
	// SeriesMaxDefault.
	SeriesMax int
	// Logger receives the idle-in-transaction warnings. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Sampler samples pg_stat_activity on an interval and keeps
// connection-seconds per caller and state. It is a prometheus.Collector and
// safe for concurrent use.
type Sampler struct {
	pool   *pgxpool.Pool
	cfg    SamplerConfig
	worker *maint.Worker

	mu       sync.Mutex
	seconds  map[Caller]float64
	last     *Activity
	logged   map[idleSpell]bool
	failures float64
}

type idleSpell struct {
	pid   int32
	since int64
}

// NewSampler returns a Sampler on pool; Start runs it.
func NewSampler(pool *pgxpool.Pool, cfg SamplerConfig) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.IdleInTransactionLog <= 0 {
		cfg.IdleInTransactionLog = 5 * time.Second
	}
	if cfg.SeriesMax <= 0 {
		cfg.SeriesMax = SeriesMaxDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Sampler{pool: pool, cfg: cfg, seconds: map[Caller]float64{}, logged: map[idleSpell]bool{}}
	s.worker = &maint.Worker{Name: "activity-sampler", Interval: cfg.Interval, Logger: cfg.Logger,
		Step: func(ctx context.Context) (bool, error) {
			_, err := s.SampleOnce(ctx)
			return false, err
		}}
	return s
}

// Register registers the sampler's metrics on reg.
func (s *Sampler) Register(reg prometheus.Registerer) error { return reg.Register(s) }

// Start starts sampling in the background. It does not block.
func (s *Sampler) Start(ctx context.Context) { s.worker.Start(ctx) }

// Stop stops sampling; idempotent, safe before Start, bounded by ctx.
func (s *Sampler) Stop(ctx context.Context) error { return s.worker.Stop(ctx) }

// SampleOnce takes one sample, adds it to the totals and logs sessions idle
// in a transaction for longer than Config.IdleInTransactionLog.
func (s *Sampler) SampleOnce(ctx context.Context) (*Activity, error) {
	a, err := s.sample(ctx)
	if err != nil {
		s.mu.Lock()
		s.failures++
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	step := s.cfg.Interval.Seconds()
	for _, c := range a.Callers {
		s.seconds[s.bounded(c.Caller)] += float64(c.Sessions) * step
	}
	s.last = a
	seen := map[idleSpell]bool{}
	for _, sess := range a.IdleInTransaction {
		if sess.StateAge < s.cfg.IdleInTransactionLog {
			continue
		}
		k := idleSpell{sess.PID, sess.StateChange.UnixNano()}
		seen[k] = true
		if s.logged[k] {
			continue
		}
		c := sess.Caller()
		s.cfg.Logger.Warn("session idle in transaction: it holds a connection, its locks and vacuum's horizon while doing nothing",
			"pid", sess.PID, "application", c.Application, "route", c.Route, "tag", c.Tag,
			"idle", sess.StateAge.Round(time.Millisecond), "transaction_age", sess.XactAge.Round(time.Millisecond),
			"last_query", truncate(sess.Query, 200))
	}
	s.logged = seen
	return a, nil
}

func (s *Sampler) sample(ctx context.Context) (*Activity, error) {
	sessions, err := Sessions(ctx, s.pool, s.cfg.AllDatabases)
	if err != nil {
		return nil, err
	}
	a := Summarize(time.Now(), sessions)
	a.Database, err = ReadDatabaseCounters(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Last is the latest sample, nil before the first.
func (s *Sampler) Last() *Activity {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// CallerSeconds is one caller's connection-seconds.
type CallerSeconds struct {
	Caller
	Seconds float64 `json:"seconds"`
}

// bounded is k, or — once SeriesMax series exist and k is not one of
// them — k folded into "other" (application, route and tag; the state
// kept), so other sessions' application_name and comments cannot grow the
// metric's label values without bound. Call with s.mu held.
func (s *Sampler) bounded(k Caller) Caller {
	if _, ok := s.seconds[k]; ok || len(s.seconds) < s.cfg.SeriesMax {
		return k
	}
	return Caller{Application: "other", Route: "other", Tag: "other", State: k.State}
}

// ConnectionSeconds returns the connection-seconds per caller and state
// since the sampler was created, most first.
func (s *Sampler) ConnectionSeconds() []CallerSeconds {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]CallerSeconds, 0, len(s.seconds))
	for c, v := range s.seconds {
		out = append(out, CallerSeconds{c, v})
	}
	sortCallerSeconds(out)
	return out
}

func sortCallerSeconds(out []CallerSeconds) {
	slices.SortFunc(out, func(x, y CallerSeconds) int {
		return cmp.Or(cmp.Compare(y.Seconds, x.Seconds), cmp.Compare(x.Application, y.Application),
			cmp.Compare(x.Route, y.Route), cmp.Compare(x.Tag, y.Tag), cmp.Compare(x.State, y.State))
	})
}

var (
	callerLabels  = []string{"application", "route", "tag", "state"}
	descConnSecs  = prometheus.NewDesc("holdfast_pg_connection_seconds_total", "Connection-seconds held in PostgreSQL, by application_name, route and tag of the sqlcommenter comment, and session state (sampled: each session seen counts one sampling interval).", callerLabels, nil)
	descSessions  = prometheus.NewDesc("holdfast_pg_sessions", "Client sessions in the latest sample, by caller and state.", callerLabels, nil)
	descOldest    = prometheus.NewDesc("holdfast_pg_oldest_transaction_seconds", "Age of the oldest open transaction in the latest sample (0 for none).", nil, nil)
	descIdleTx    = prometheus.NewDesc("holdfast_pg_idle_in_transaction_sessions", "Sessions idle in a transaction in the latest sample.", nil, nil)
	descIdleTxMax = prometheus.NewDesc("holdfast_pg_idle_in_transaction_longest_seconds", "Longest idle-in-transaction spell in the latest sample (0 for none).", nil, nil)
	descWaits     = prometheus.NewDesc("holdfast_pg_wait_sessions", "Active sessions waiting, by wait_event_type and wait_event, in the latest sample.", []string{"wait_event_type", "wait_event"}, nil)
	descCommits   = prometheus.NewDesc("holdfast_pg_xact_commit_total", "Transactions committed in the database (pg_stat_database).", nil, nil)
	descRollbacks = prometheus.NewDesc("holdfast_pg_xact_rollback_total", "Transactions rolled back in the database (pg_stat_database).", nil, nil)
	descDeadlocks = prometheus.NewDesc("holdfast_pg_deadlocks_total", "Deadlocks detected in the database (pg_stat_database).", nil, nil)
	descFailures  = prometheus.NewDesc("holdfast_ops_activity_sample_failures_total", "Activity samples that failed.", nil, nil)
)

// Describe implements prometheus.Collector.
func (s *Sampler) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnSecs, descSessions, descOldest, descIdleTx, descIdleTxMax, descWaits, descCommits, descRollbacks, descDeadlocks, descFailures} {
		ch <- d
	}
}

// Collect implements prometheus.Collector from the totals and the latest
// sample; it does not query the database.
func (s *Sampler) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, v := range s.seconds {
		ch <- prometheus.MustNewConstMetric(descConnSecs, prometheus.CounterValue, v, c.Application, c.Route, c.Tag, c.State)
	}
	ch <- prometheus.MustNewConstMetric(descFailures, prometheus.CounterValue, s.failures)
	a := s.last
	if a == nil {
		return
	}
	sessions := map[Caller]int{}
	for _, c := range a.Callers {
		sessions[s.bounded(c.Caller)] += c.Sessions
	}
	for c, n := range sessions {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(n), c.Application, c.Route, c.Tag, c.State)
	}
	oldest := 0.0
	if a.Oldest != nil {
		oldest = a.Oldest.XactAge.Seconds()
	}
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, oldest)
	ch <- prometheus.MustNewConstMetric(descIdleTx, prometheus.GaugeValue, float64(len(a.IdleInTransaction)))
	longest := 0.0
	if len(a.IdleInTransaction) > 0 {
		longest = a.IdleInTransaction[0].StateAge.Seconds()
	}
	ch <- prometheus.MustNewConstMetric(descIdleTxMax, prometheus.GaugeValue, longest)
	for _, w := range a.Waits {
		ch <- prometheus.MustNewConstMetric(descWaits, prometheus.GaugeValue, float64(w.Sessions), w.Type, w.Event)
	}
	ch <- prometheus.MustNewConstMetric(descCommits, prometheus.CounterValue, float64(a.Database.Commits))
	ch <- prometheus.MustNewConstMetric(descRollbacks, prometheus.CounterValue, float64(a.Database.Rollbacks))
	ch <- prometheus.MustNewConstMetric(descDeadlocks, prometheus.CounterValue, float64(a.Database.Deadlocks))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
