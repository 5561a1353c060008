package pgops

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast/internal/maint"
)

// Defaults of the bloat SLI.
const (
	// DeadPercentMaxDefault is the share of dead tuples above which a table
	// counts as behind on vacuum (20%: past it, scans read mostly dead rows).
	DeadPercentMaxDefault = 20.0
	// BloatWindowDefault is how long a table must stay above
	// DeadPercentMax before its alert flag goes up.
	BloatWindowDefault = 5 * time.Minute
	// MinDeadTuplesDefault: fewer dead tuples never alert, whatever their
	// share. It matches the partitions' autovacuum_vacuum_threshold, below
	// which autovacuum does not run by design.
	MinDeadTuplesDefault = 1000
)

// TableStat is one table's tuples and vacuum history.
type TableStat struct {
	Table string `json:"table"`
	Live  int64  `json:"live"`
	Dead  int64  `json:"dead"`
	// DeadPercent is 100 × dead / (live + dead), 0 for an empty table.
	DeadPercent float64 `json:"dead_percent"`
	// LastAutovacuum and LastVacuum are zero when it never ran.
	LastAutovacuum  time.Time `json:"last_autovacuum"`
	LastVacuum      time.Time `json:"last_vacuum"`
	AutovacuumCount int64     `json:"autovacuum_count"`
	VacuumCount     int64     `json:"vacuum_count"`
	// Alert is true when DeadPercent has stayed above the monitor's
	// DeadPercentMax (with at least MinDeadTuples dead) since AboveSince,
	// for longer than its Window.
	Alert      bool      `json:"alert"`
	AboveSince time.Time `json:"above_since"`
}

// Bloat is one scan: the churning tables and transaction ID age.
type Bloat struct {
	At     time.Time   `json:"at"`
	Tables []TableStat `json:"tables"`
	// FrozenXIDAge is age(datfrozenxid) of the database; FreezeMaxAge is
	// autovacuum_freeze_max_age, where anti-wraparound vacuum starts.
	FrozenXIDAge int64 `json:"frozen_xid_age"`
	FreezeMaxAge int64 `json:"freeze_max_age"`
	// XminHorizonAge is the age in transaction IDs of the oldest snapshot,
	// replication slot or prepared transaction holding back vacuum.
	XminHorizonAge int64 `json:"xmin_horizon_age"`
}

// TableStats reads the tuples and vacuum history of the reservation_units
// partitions (numeric order), then inventory_counters, holds and
// reserved_quantities.
func TableStats(ctx context.Context, q Querier) ([]TableStat, error) {
	rows, err := q.Query(ctx, statement("table_stats"))
	if err != nil {
		return nil, fmt.Errorf("ops: read pg_stat_user_tables: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (TableStat, error) {
		var t TableStat
		var av, v *time.Time
		err := row.Scan(&t.Table, &t.Live, &t.Dead, &av, &v, &t.AutovacuumCount, &t.VacuumCount)
		if av != nil {
			t.LastAutovacuum = *av
		}
		if v != nil {
			t.LastVacuum = *v
		}
		if t.Live+t.Dead > 0 {
			t.DeadPercent = 100 * float64(t.Dead) / float64(t.Live+t.Dead)
		}
		return t, err
	})
}

// ReadBloat reads the table statistics and transaction ID ages (no alert
// state: that needs a BloatMonitor's history).
func ReadBloat(ctx context.Context, q Querier) (*Bloat, error) {
	tables, err := TableStats(ctx, q)
	if err != nil {
		return nil, err
	}
	b := &Bloat{At: time.Now(), Tables: tables}
	if err := q.QueryRow(ctx, statement("xid_age")).Scan(&b.FrozenXIDAge, &b.FreezeMaxAge, &b.XminHorizonAge); err != nil {
		return nil, fmt.Errorf("ops: read transaction ID age: %w", err)
	}
	return b, nil
}

// BloatConfig configures a BloatMonitor. The zero value of every field
// means its default.
type BloatConfig struct {
	// Interval between scans. Defaults to 15 seconds.
	Interval time.Duration
	// DeadPercentMax, Window and MinDeadTuples define the alert: dead
	// tuples above DeadPercentMax percent (and at least MinDeadTuples) on
	// every scan for longer than Window. Default to 20%, 5 minutes and 1,000.
	DeadPercentMax float64
	Window         time.Duration
	MinDeadTuples  int64
	// Now is the clock the window is measured with, for tests. Defaults to
	// time.Now.
	Now func() time.Time
	// Logger receives alert transitions. Defaults to slog.Default().
	Logger *slog.Logger
}

// BloatMonitor scans the churning tables on an interval and keeps the bloat
// alert state. It is a prometheus.Collector and safe for concurrent use.
type BloatMonitor struct {
	pool   *pgxpool.Pool
	cfg    BloatConfig
	worker *maint.Worker

	mu       sync.Mutex
	above    map[string]time.Time // table -> first scan of the current spell above the line
	alerting map[string]bool
	last     *Bloat
	failures float64
}

// NewBloatMonitor returns a BloatMonitor on pool; Start runs it.
func NewBloatMonitor(pool *pgxpool.Pool, cfg BloatConfig) *BloatMonitor {
	if cfg.Interval <= 0 {
		cfg.Interval = 15 * time.Second
	}
	if cfg.DeadPercentMax <= 0 {
		cfg.DeadPercentMax = DeadPercentMaxDefault
	}
	if cfg.Window <= 0 {
		cfg.Window = BloatWindowDefault
	}
	if cfg.MinDeadTuples <= 0 {
		cfg.MinDeadTuples = MinDeadTuplesDefault
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &BloatMonitor{pool: pool, cfg: cfg, above: map[string]time.Time{}, alerting: map[string]bool{}}
	m.worker = &maint.Worker{Name: "bloat-monitor", Interval: cfg.Interval, Logger: cfg.Logger,
		Step: func(ctx context.Context) (bool, error) {
			_, err := m.ScanOnce(ctx)
			return false, err
		}}
	return m
}

// Register registers the monitor's metrics on reg.
func (m *BloatMonitor) Register(reg prometheus.Registerer) error { return reg.Register(m) }

// Start starts scanning in the background. It does not block.
func (m *BloatMonitor) Start(ctx context.Context) { m.worker.Start(ctx) }

// Stop stops scanning; idempotent, safe before Start, bounded by ctx.
func (m *BloatMonitor) Stop(ctx context.Context) error { return m.worker.Stop(ctx) }

// ScanOnce reads the tables once and updates the alert flags.
func (m *BloatMonitor) ScanOnce(ctx context.Context) (*Bloat, error) {
	b, err := ReadBloat(ctx, m.pool)
	if err != nil {
		m.mu.Lock()
		m.failures++
		m.mu.Unlock()
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.observe(b, m.cfg.Now())
	m.last = b
	return b, nil
}

// observe applies one scan taken at now to the alert state and fills in
// each table's Alert and AboveSince.
func (m *BloatMonitor) observe(b *Bloat, now time.Time) {
	b.At = now
	seen := map[string]bool{}
	for i := range b.Tables {
		t := &b.Tables[i]
		seen[t.Table] = true
		if t.DeadPercent <= m.cfg.DeadPercentMax || t.Dead < m.cfg.MinDeadTuples {
			delete(m.above, t.Table)
			if m.alerting[t.Table] {
				m.cfg.Logger.Info("bloat alert cleared: vacuum caught up", "table", t.Table,
					"dead_tuples", t.Dead, "dead_percent", round1(t.DeadPercent))
				delete(m.alerting, t.Table)
			}
			continue
		}
		since, ok := m.above[t.Table]
		if !ok {
			since = now
			m.above[t.Table] = now
		}
		t.AboveSince = since
		t.Alert = now.Sub(since) >= m.cfg.Window
		if t.Alert && !m.alerting[t.Table] {
			m.alerting[t.Table] = true
			m.cfg.Logger.Warn("bloat alert: vacuum is behind on a table that churns on every reservation",
				"table", t.Table, "dead_tuples", t.Dead, "live_tuples", t.Live,
				"dead_percent", round1(t.DeadPercent), "above_since", since,
				"last_autovacuum", t.LastAutovacuum)
		}
	}
	for name := range m.above {
		if !seen[name] {
			delete(m.above, name)
			delete(m.alerting, name)
		}
	}
}

// Last is the latest scan, nil before the first.
func (m *BloatMonitor) Last() *Bloat {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

var (
	tableLabel       = []string{"table"}
	descLive         = prometheus.NewDesc("holdfast_pg_table_live_tuples", "Live tuples (pg_stat_user_tables.n_live_tup) of the tables that churn.", tableLabel, nil)
	descDead         = prometheus.NewDesc("holdfast_pg_table_dead_tuples", "Dead tuples (n_dead_tup) of the tables that churn.", tableLabel, nil)
	descDeadRatio    = prometheus.NewDesc("holdfast_pg_table_dead_ratio", "Dead tuples ÷ (live + dead), 0..1.", tableLabel, nil)
	descAutovacuums  = prometheus.NewDesc("holdfast_pg_table_autovacuum_total", "Autovacuum runs on the table (autovacuum_count).", tableLabel, nil)
	descLastAutovac  = prometheus.NewDesc("holdfast_pg_table_last_autovacuum_timestamp_seconds", "Unix time of the last autovacuum of the table, 0 for never.", tableLabel, nil)
	descBloatAlert   = prometheus.NewDesc("holdfast_pg_table_bloat_alert", "1 when the table's dead share has stayed above the threshold for longer than the window.", tableLabel, nil)
	descFrozenAge    = prometheus.NewDesc("holdfast_pg_database_frozen_xid_age", "age(datfrozenxid) of the database, in transaction IDs.", nil, nil)
	descFreezeMax    = prometheus.NewDesc("holdfast_pg_autovacuum_freeze_max_age", "autovacuum_freeze_max_age: the age where anti-wraparound vacuum starts.", nil, nil)
	descXminAge      = prometheus.NewDesc("holdfast_pg_xmin_horizon_age", "Age in transaction IDs of the oldest snapshot, slot or prepared transaction holding back vacuum in the database.", nil, nil)
	descBloatFailure = prometheus.NewDesc("holdfast_ops_bloat_scan_failures_total", "Bloat scans that failed.", nil, nil)
)

// Describe implements prometheus.Collector.
func (m *BloatMonitor) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLive, descDead, descDeadRatio, descAutovacuums, descLastAutovac, descBloatAlert, descFrozenAge, descFreezeMax, descXminAge, descBloatFailure} {
		ch <- d
	}
}

// Collect implements prometheus.Collector from the latest scan; it does not
// query the database.
func (m *BloatMonitor) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descBloatFailure, prometheus.CounterValue, m.failures)
	b := m.last
	if b == nil {
		return
	}
	for _, t := range b.Tables {
		ch <- prometheus.MustNewConstMetric(descLive, prometheus.GaugeValue, float64(t.Live), t.Table)
		ch <- prometheus.MustNewConstMetric(descDead, prometheus.GaugeValue, float64(t.Dead), t.Table)
		ch <- prometheus.MustNewConstMetric(descDeadRatio, prometheus.GaugeValue, t.DeadPercent/100, t.Table)
		ch <- prometheus.MustNewConstMetric(descAutovacuums, prometheus.CounterValue, float64(t.AutovacuumCount), t.Table)
		last := 0.0
		if !t.LastAutovacuum.IsZero() {
			last = float64(t.LastAutovacuum.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(descLastAutovac, prometheus.GaugeValue, last, t.Table)
		alert := 0.0
		if t.Alert {
			alert = 1
		}
		ch <- prometheus.MustNewConstMetric(descBloatAlert, prometheus.GaugeValue, alert, t.Table)
	}
	ch <- prometheus.MustNewConstMetric(descFrozenAge, prometheus.GaugeValue, float64(b.FrozenXIDAge))
	ch <- prometheus.MustNewConstMetric(descFreezeMax, prometheus.GaugeValue, float64(b.FreezeMaxAge))
	ch <- prometheus.MustNewConstMetric(descXminAge, prometheus.GaugeValue, float64(b.XminHorizonAge))
}
