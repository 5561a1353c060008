package pods

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a move, the result label of holdfast_pods_moves_finished_total.
const (
	// MoveResultMoved: the shop switched to the target (a later step — the
	// stream's end, the purge — may still have failed; pods abort finishes
	// it).
	MoveResultMoved = "moved"
	// MoveResultRefused: ErrMoveRefused, nothing changed.
	MoveResultRefused = "refused"
	// MoveResultMismatch: ErrMoveMismatch, undone.
	MoveResultMismatch = "mismatch"
	// MoveResultUnresolved: ErrMoveUnresolved: the shop stays fenced until
	// pods abort.
	MoveResultUnresolved = "unresolved"
	// MoveResultCancelled: the move's context ended (an abort, a
	// shutdown) before the switch; undone.
	MoveResultCancelled = "cancelled"
	// MoveResultFailed: any other failure before the switch; undone.
	MoveResultFailed = "failed"
)

// MoveResults are the values of the result label, created at zero.
var MoveResults = []string{MoveResultMoved, MoveResultRefused, MoveResultMismatch, MoveResultUnresolved, MoveResultCancelled, MoveResultFailed}

// MoveSteps are the values of the step label of
// holdfast_pods_move_step_seconds: the report's timings (MoveReport).
var MoveSteps = []string{"stream", "copy", "verify", "switch", "purge"}

// moveStats are the metrics of a process's moves.
type moveStats struct {
	started    prometheus.Counter
	finished   *prometheus.CounterVec
	inProgress prometheus.Gauge
	fence      prometheus.Histogram
	steps      *prometheus.HistogramVec
}

// moveMetrics are the moves of this process (every Move, whoever calls
// it), exported by MoveCollectors.
var moveMetrics = newMoveStats()

func newMoveStats() *moveStats {
	m := &moveStats{
		started: prometheus.NewCounter(prometheus.CounterOpts{Name: "holdfast_pods_moves_started_total",
			Help: "Shop moves started by this process."}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "holdfast_pods_moves_finished_total",
			Help: "Shop moves ended, by result: moved, refused, mismatch, unresolved, cancelled, failed."}, []string{"result"}),
		inProgress: prometheus.NewGauge(prometheus.GaugeOpts{Name: "holdfast_pods_moves_in_progress",
			Help: "Shop moves running in this process."}),
		fence: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "holdfast_pods_move_fence_seconds",
			Help:    "How long a moved shop's writes were refused (MoveReport.Fence), of moves that switched.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "holdfast_pods_move_step_seconds",
			Help:    "Steps of moves that switched, by step: stream (ahead of the fence), copy (or catch-up), verify, switch, purge.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800}}, []string{"step"}),
	}
	for _, r := range MoveResults {
		m.finished.WithLabelValues(r)
	}
	for _, s := range MoveSteps {
		m.steps.WithLabelValues(s)
	}
	return m
}

// MoveCollectors are the Prometheus metrics of the moves this process
// runs (Move, Mover), to register — on as many registries as one likes:
// holdfast_pods_moves_started_total, holdfast_pods_moves_finished_total{result},
// holdfast_pods_moves_in_progress, holdfast_pods_move_fence_seconds and
// holdfast_pods_move_step_seconds{step}.
func MoveCollectors() []prometheus.Collector {
	m := moveMetrics
	return []prometheus.Collector{m.started, m.finished, m.inProgress, m.fence, m.steps}
}

// MoveResult names how a move ended (MoveResults), from what Move
// answered and the context it ran under.
func MoveResult(ctx context.Context, rep *MoveReport, err error) string {
	switch {
	case errors.Is(err, ErrMoveUnresolved):
		return MoveResultUnresolved
	case rep != nil:
		return MoveResultMoved
	case errors.Is(err, ErrMoveRefused):
		return MoveResultRefused
	case errors.Is(err, ErrMoveMismatch):
		return MoveResultMismatch
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return MoveResultCancelled
	}
	return MoveResultFailed
}

// observedMove is move, counted in moveMetrics.
func observedMove(ctx context.Context, p MoveParams, hook func(step string) error) (*MoveReport, error) {
	m := moveMetrics
	m.started.Inc()
	m.inProgress.Inc()
	defer m.inProgress.Dec()
	rep, err := move(ctx, p, hook)
	m.finished.WithLabelValues(MoveResult(ctx, rep, err)).Inc()
	if rep != nil {
		if rep.Fence > 0 {
			m.fence.Observe(rep.Fence.Seconds())
		}
		for step, d := range map[string]time.Duration{"stream": rep.Stream, "copy": rep.Copy, "verify": rep.Verify, "switch": rep.Switch, "purge": rep.Purge} {
			if d > 0 {
				m.steps.WithLabelValues(step).Observe(d.Seconds())
			}
		}
	}
	return rep, err
}
