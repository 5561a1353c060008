package metrics

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
)

// SQLPoolCollector reports a database/sql pool's statistics (the MySQL
// engine's) when scraped, under pgops.PoolCollector's metric names where
// database/sql has the same figure, so one dashboard reads either engine.
// It is safe for concurrent use.
type SQLPoolCollector struct {
	db *sql.DB

	acquired, idle, total, max      *prometheus.Desc
	emptyAcquires, emptyWaitSeconds *prometheus.Desc
	lifetimeDestroys, idleDestroys  *prometheus.Desc
}

var _ prometheus.Collector = (*SQLPoolCollector)(nil)

// NewSQLPoolCollector returns a collector of db's statistics. name is a
// constant "pool" label that tells pools of one process apart.
func NewSQLPoolCollector(db *sql.DB, name string) *SQLPoolCollector {
	labels := prometheus.Labels{"pool": name}
	d := func(n, help string) *prometheus.Desc {
		return prometheus.NewDesc("holdfast_db_pool_"+n, help, nil, labels)
	}
	return &SQLPoolCollector{
		db:               db,
		acquired:         d("acquired_conns", "Connections currently acquired."),
		idle:             d("idle_conns", "Idle connections."),
		total:            d("total_conns", "Connections open or being opened."),
		max:              d("max_conns", "The pool's maximum size (0: unbounded)."),
		emptyAcquires:    d("empty_acquires_total", "Acquires that had to wait for a connection."),
		emptyWaitSeconds: d("empty_acquire_wait_seconds_total", "Total time acquires waited for a connection."),
		lifetimeDestroys: d("max_lifetime_destroys_total", "Connections closed for reaching their maximum lifetime."),
		idleDestroys:     d("max_idle_destroys_total", "Connections closed for idling too long or above the idle bound."),
	}
}

// Describe implements prometheus.Collector.
func (p *SQLPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.acquired, p.idle, p.total, p.max,
		p.emptyAcquires, p.emptyWaitSeconds, p.lifetimeDestroys, p.idleDestroys} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *SQLPoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.db.Stats()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	c := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	g(p.acquired, float64(s.InUse))
	g(p.idle, float64(s.Idle))
	g(p.total, float64(s.OpenConnections))
	g(p.max, float64(s.MaxOpenConnections))
	c(p.emptyAcquires, float64(s.WaitCount))
	c(p.emptyWaitSeconds, s.WaitDuration.Seconds())
	c(p.lifetimeDestroys, float64(s.MaxLifetimeClosed))
	c(p.idleDestroys, float64(s.MaxIdleClosed+s.MaxIdleTimeClosed))
}
