package pgops

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector reports a pgxpool.Pool's statistics when scraped. It is
// safe for concurrent use.
type PoolCollector struct {
	pool *pgxpool.Pool

	acquired, idle, total, max, constructing  *prometheus.Desc
	acquires, emptyAcquires, canceledAcquires *prometheus.Desc
	acquireSeconds, emptyWaitSeconds          *prometheus.Desc
	newConns, lifetimeDestroys, idleDestroys  *prometheus.Desc
}

var _ prometheus.Collector = (*PoolCollector)(nil)

// NewPoolCollector returns a collector of pool's statistics. name is a
// constant "pool" label that tells pools of one process apart.
func NewPoolCollector(pool *pgxpool.Pool, name string) *PoolCollector {
	labels := prometheus.Labels{"pool": name}
	d := func(n, help string) *prometheus.Desc {
		return prometheus.NewDesc("holdfast_db_pool_"+n, help, nil, labels)
	}
	return &PoolCollector{
		pool:             pool,
		acquired:         d("acquired_conns", "Connections currently acquired."),
		idle:             d("idle_conns", "Idle connections."),
		total:            d("total_conns", "Connections open or being opened."),
		max:              d("max_conns", "The pool's maximum size."),
		constructing:     d("constructing_conns", "Connections being opened."),
		acquires:         d("acquires_total", "Successful acquires."),
		emptyAcquires:    d("empty_acquires_total", "Acquires that had to wait for a connection."),
		canceledAcquires: d("canceled_acquires_total", "Acquires canceled by their context."),
		acquireSeconds:   d("acquire_seconds_total", "Total time spent acquiring connections."),
		emptyWaitSeconds: d("empty_acquire_wait_seconds_total", "Total time acquires waited for a connection."),
		newConns:         d("new_conns_total", "Connections opened."),
		lifetimeDestroys: d("max_lifetime_destroys_total", "Connections closed for reaching their maximum lifetime."),
		idleDestroys:     d("max_idle_destroys_total", "Connections closed for idling too long."),
	}
}

// Describe implements prometheus.Collector.
func (p *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.acquired, p.idle, p.total, p.max, p.constructing,
		p.acquires, p.emptyAcquires, p.canceledAcquires, p.acquireSeconds, p.emptyWaitSeconds,
		p.newConns, p.lifetimeDestroys, p.idleDestroys} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.pool.Stat()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	c := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	g(p.acquired, float64(s.AcquiredConns()))
	g(p.idle, float64(s.IdleConns()))
	g(p.total, float64(s.TotalConns()))
	g(p.max, float64(s.MaxConns()))
	g(p.constructing, float64(s.ConstructingConns()))
	c(p.acquires, float64(s.AcquireCount()))
	c(p.emptyAcquires, float64(s.EmptyAcquireCount()))
	c(p.canceledAcquires, float64(s.CanceledAcquireCount()))
	c(p.acquireSeconds, s.AcquireDuration().Seconds())
	c(p.emptyWaitSeconds, s.EmptyAcquireWaitTime().Seconds())
	c(p.newConns, float64(s.NewConnsCount()))
	c(p.lifetimeDestroys, float64(s.MaxLifetimeDestroyCount()))
	c(p.idleDestroys, float64(s.MaxIdleDestroyCount()))
}
