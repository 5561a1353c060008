package console

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The series the charts read: the API's own request metrics (package
// httpapi), for the reserve route.
const (
	requestsMetric = "holdfast_http_requests_total"
	durationMetric = "holdfast_http_request_duration_seconds"
	chartRoute     = "reserve"
)

// charts samples the metrics every interval and keeps the last ChartPoints
// rates: new holds per second (reserve answers 201) and the reserve
// route's p99 latency over the interval (from the histogram's buckets, as
// Prometheus' histogram_quantile interpolates them).
type charts struct {
	g        prometheus.Gatherer
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	last    *sample
	points  []point
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

type sample struct {
	at      time.Time
	created float64
	buckets []bucket // cumulative, by upper bound
	count   float64
}

type bucket struct {
	le float64
	n  float64
}

type point struct {
	at       time.Time
	holdsPS  float64
	p99ms    float64
	hasP99   bool
	requests float64
}

func newCharts(g prometheus.Gatherer, interval time.Duration, log *slog.Logger) *charts {
	return &charts{g: g, interval: interval, log: log}
}

func (c *charts) start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.g == nil || c.cancel != nil || c.stopped {
		return
	}
	ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		t := time.NewTicker(c.interval)
		defer t.Stop()
		c.sampleOnce(time.Now())
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				c.sampleOnce(now)
			}
		}
	}()
}

func (c *charts) stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopped = true
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *charts) sampleOnce(now time.Time) {
	s, err := c.read(now)
	if err != nil {
		c.log.Warn("console charts: reading the metrics", "error", err.Error())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.last; prev != nil {
		dt := s.at.Sub(prev.at).Seconds()
		if dt > 0 && s.created >= prev.created && s.count >= prev.count {
			p := point{at: s.at, holdsPS: (s.created - prev.created) / dt, requests: s.count - prev.count}
			p.p99ms, p.hasP99 = quantile(0.99, prev.buckets, s.buckets)
			p.p99ms *= 1000
			c.points = append(c.points, p)
			if len(c.points) > ChartPoints {
				c.points = c.points[len(c.points)-ChartPoints:]
			}
		}
	}
	c.last = s
}

func (c *charts) read(now time.Time) (*sample, error) {
	fams, err := c.g.Gather()
	if err != nil {
		return nil, err
	}
	s := &sample{at: now}
	byLE := map[float64]float64{}
	for _, f := range fams {
		switch f.GetName() {
		case requestsMetric:
			for _, m := range f.GetMetric() {
				if label(m, "route") == chartRoute && label(m, "status") == "201" {
					s.created += m.GetCounter().GetValue()
				}
			}
		case durationMetric:
			for _, m := range f.GetMetric() {
				if label(m, "route") != chartRoute {
					continue
				}
				h := m.GetHistogram()
				s.count += float64(h.GetSampleCount())
				for _, b := range h.GetBucket() {
					byLE[b.GetUpperBound()] += float64(b.GetCumulativeCount())
				}
				byLE[math.Inf(1)] += float64(h.GetSampleCount())
			}
		}
	}
	for le, n := range byLE {
		s.buckets = append(s.buckets, bucket{le, n})
	}
	sort.Slice(s.buckets, func(i, j int) bool { return s.buckets[i].le < s.buckets[j].le })
	return s, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// quantile is the q-quantile of the observations between two cumulative
// bucket sets, interpolated linearly within its bucket; false when there
// were none. Past the last finite bound it answers that bound.
func quantile(q float64, prev, cur []bucket) (float64, bool) {
	old := map[float64]float64{}
	for _, b := range prev {
		old[b.le] = b.n
	}
	d := make([]bucket, len(cur))
	for i, b := range cur {
		d[i] = bucket{b.le, b.n - old[b.le]}
	}
	if len(d) == 0 || d[len(d)-1].n <= 0 {
		return 0, false
	}
	rank := q * d[len(d)-1].n
	lower, below := 0.0, 0.0
	for _, b := range d {
		if b.n >= rank {
			if math.IsInf(b.le, 1) {
				return lower, true
			}
			if b.n == below {
				return b.le, true
			}
			return lower + (b.le-lower)*(rank-below)/(b.n-below), true
		}
		lower, below = b.le, b.n
	}
	return lower, true
}

// chartView is one chart as the template draws it: an SVG polyline in a
// Width×Height box.
type chartView struct {
	ID     string
	Title  string
	Points string // "x,y x,y …"
	// LastX and LastY place a dot on the newest point (a single point
	// draws no line).
	LastX, LastY string
	N            int
	Last         string
	Max          string
	Width        int
	Height       int
}

type chartsView struct {
	On       bool
	Interval string
	Charts   []chartView
}

func (c *charts) view() chartsView {
	c.mu.Lock()
	pts := append([]point(nil), c.points...)
	c.mu.Unlock()
	v := chartsView{On: c.g != nil, Interval: c.interval.String()}
	holds := make([]float64, len(pts))
	p99 := make([]float64, 0, len(pts))
	p99i := make([]int, 0, len(pts))
	for i, p := range pts {
		holds[i] = p.holdsPS
		if p.hasP99 {
			p99 = append(p99, p.p99ms)
			p99i = append(p99i, i)
		}
	}
	v.Charts = []chartView{
		draw("holds-per-second", "New holds per second", holds, nil, len(pts), "/s"),
		draw("reserve-p99", "Reservation p99 latency", p99, p99i, len(pts), " ms"),
	}
	return v
}

const chartW, chartH = 600, 120

// draw lays values out over the chart's width by their sample index (xs;
// nil is 0..len-1) out of n samples, scaled to the largest value.
func draw(id, title string, values []float64, xs []int, n int, unit string) chartView {
	cv := chartView{ID: id, Title: title, N: len(values), Width: chartW, Height: chartH}
	if len(values) == 0 {
		return cv
	}
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	scale := top
	if scale == 0 {
		scale = 1
	}
	span := max(n-1, 1)
	var b strings.Builder
	for i, v := range values {
		x := i
		if xs != nil {
			x = xs[i]
		}
		px := float64(x) * float64(chartW) / float64(span)
		if n == 1 {
			px = float64(chartW)
		}
		py := float64(chartH) - v/scale*float64(chartH-10)
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", px, py)
		cv.LastX, cv.LastY = strconv.FormatFloat(px, 'f', 1, 64), strconv.FormatFloat(py, 'f', 1, 64)
	}
	cv.Points = b.String()
	cv.Last = strconv.FormatFloat(values[len(values)-1], 'f', 1, 64) + unit
	cv.Max = strconv.FormatFloat(top, 'f', 1, 64) + unit
	return cv
}
