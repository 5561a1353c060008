// Package metrics exports holdfast's engine events and database pool
// statistics as Prometheus metrics.
//
// Engine implements holdfast.Observer; pass it as holdfast.Config.Observer
// and register it on a prometheus.Registerer. SQLPoolCollector reports a
// database/sql pool's statistics at scrape time; PostgreSQL's pgx pool has
// its own (postgres/pgops.PoolCollector), under the same metric names.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast"
)

// Engine collects the engine's events. It is safe for concurrent use; the
// zero value is not usable: call NewEngine.
type Engine struct {
	ops         *prometheus.HistogramVec
	retries     *prometheus.CounterVec
	replenished *prometheus.CounterVec
	expired     prometheus.Counter
	claimAge    prometheus.Histogram
}

var _ holdfast.Observer = (*Engine)(nil)
var _ prometheus.Collector = (*Engine)(nil)

// Label values whose series NewEngine creates at zero, so that dashboards
// and alerts see 0 on a fresh server instead of no data. Other values
// appear with their first event.
var (
	// KnownOps are the (op, outcome) pairs of the op histogram: every
	// operation's success, a sold-out reservation, and unavailable.
	KnownOps = [][2]string{
		{holdfast.OpReserve, string(holdfast.StatusHeld)},
		{holdfast.OpReserve, "insufficient_stock"},
		{holdfast.OpReserve, "unavailable"},
		{holdfast.OpClaim, string(holdfast.StatusClaimed)},
		{holdfast.OpClaim, "unavailable"},
		{holdfast.OpRelease, string(holdfast.StatusReleased)},
		{holdfast.OpRelease, "unavailable"},
		{holdfast.OpExtend, string(holdfast.StatusHeld)},
		{holdfast.OpExtend, "unavailable"},
		{holdfast.OpAdjust, "ok"},
		{holdfast.OpAdjust, "unavailable"},
	}
	// KnownRetryOps and KnownRetrySQLStates span the retry counter:
	// the ops that run transactions, and the SQLSTATEs the engine
	// retries ("connection" for a lost connection).
	KnownRetryOps = []string{holdfast.OpReserve, holdfast.OpClaim, holdfast.OpRelease,
		holdfast.OpExtend, holdfast.OpAdjust, holdfast.OpSweep, holdfast.OpReplenish}
	KnownRetrySQLStates = []string{"40P01", "40001", "55P03", "25P03", "57P01", "57P03", "connection"}
	// ReplenishModes are the modes of the replenished-units counter.
	ReplenishModes = []string{"inline", "background"}
)

// NewEngine returns an Engine with its metrics unregistered and the series
// of the Known… label values created at zero.
func NewEngine() *Engine {
	e := newEngine()
	for _, op := range KnownOps {
		e.ops.WithLabelValues(op[0], op[1])
	}
	for _, op := range KnownRetryOps {
		for _, state := range KnownRetrySQLStates {
			e.retries.WithLabelValues(op, state)
		}
	}
	for _, mode := range ReplenishModes {
		e.replenished.WithLabelValues(mode)
	}
	return e
}

func newEngine() *Engine {
	return &Engine{
		ops: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "holdfast_engine_op_duration_seconds",
			Help:    "Engine operations by op and outcome (held, replayed, insufficient_stock, unavailable, ...), with their duration including retries.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"op", "outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "holdfast_engine_retries_total",
			Help: "Transactions the engine ran again, by op and SQLSTATE (\"connection\" for a lost connection).",
		}, []string{"op", "sqlstate"}),
		replenished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "holdfast_replenished_units_total",
			Help: "Units added to keys' allocation buffers, inline (on a buyer's reservation) or in the background.",
		}, []string{"mode"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "holdfast_holds_expired_total",
			Help: "Holds the sweeper expired.",
		}),
		claimAge: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "holdfast_claim_hold_age_seconds",
			Help:    "Time from reservation to claim.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600},
		}),
	}
}

// Op implements holdfast.Observer.
func (e *Engine) Op(op, outcome string, d time.Duration) {
	e.ops.WithLabelValues(op, outcome).Observe(d.Seconds())
}

// Retry implements holdfast.Observer.
func (e *Engine) Retry(op, sqlstate string) { e.retries.WithLabelValues(op, sqlstate).Inc() }

// Replenished implements holdfast.Observer. Keys are not labels: their
// number is unbounded.
func (e *Engine) Replenished(_ holdfast.Key, inline bool, units int) {
	mode := "background"
	if inline {
		mode = "inline"
	}
	e.replenished.WithLabelValues(mode).Add(float64(units))
}

// Expired implements holdfast.Observer.
func (e *Engine) Expired(n int) { e.expired.Add(float64(n)) }

// Claimed implements holdfast.Observer.
func (e *Engine) Claimed(holdAge time.Duration) { e.claimAge.Observe(holdAge.Seconds()) }

// Describe implements prometheus.Collector.
func (e *Engine) Describe(ch chan<- *prometheus.Desc) {
	e.ops.Describe(ch)
	e.retries.Describe(ch)
	e.replenished.Describe(ch)
	e.expired.Describe(ch)
	e.claimAge.Describe(ch)
}

// Collect implements prometheus.Collector.
func (e *Engine) Collect(ch chan<- prometheus.Metric) {
	e.ops.Collect(ch)
	e.retries.Collect(ch)
	e.replenished.Collect(ch)
	e.expired.Collect(ch)
	e.claimAge.Collect(ch)
}
