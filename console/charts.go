package console

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ChartShopsMax bounds the shops whose charts the console keeps: past it,
// the shop whose last reservation is oldest is forgotten (about 13 kB a
// shop).
const ChartShopsMax = 500

// latencyBoundsMS are the upper bounds (milliseconds) of the buckets the
// charts count reservation latencies in; one more bucket holds the rest.
var latencyBoundsMS = [...]float64{1, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000}

// Refusal reports whether an answer of the reserve route is a refusal: a
// 4xx that says the request was not one to serve (a missing or bad key,
// 401, which the server holds for RefusalDelay; another shop's, 403; a
// malformed or out-of-bounds body), as opposed to the
// engine's answers (201, 200 for a replay, 409 sold out or a conflict,
// 410) and its failures (5xx). The charts leave refusals out: their
// latency is the server's choice, not the reservation's.
func Refusal(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusConflict && status != http.StatusGone
}

// charts counts the reserve route's answers in intervals of interval, for
// the server (every shop) and for each of the ChartShopsMax shops last
// active: the answers, the new holds (201) and a histogram of their
// latency. Intervals older than ChartPoints are overwritten. Safe for
// concurrent use.
type charts struct {
	interval time.Duration

	mu     sync.Mutex
	server series
	shops  map[int64]*series
	seq    uint64 // answers observed: orders the shops by their latest
	// forgot is the newest interval in which a shop was forgotten.
	forgot int64
}

// series is a ring of ChartPoints intervals.
type series struct {
	slots [ChartPoints]slot
	seq   uint64 // charts.seq at its latest answer
}

type slot struct {
	num     int64 // the interval: unix time / interval
	answers uint32
	created uint32
	hist    [len(latencyBoundsMS) + 1]uint32
}

func (s *series) observe(num int64, created bool, bucket int) {
	sl := &s.slots[num%ChartPoints]
	if sl.num != num {
		*sl = slot{num: num}
	}
	sl.answers++
	if created {
		sl.created++
	}
	sl.hist[bucket]++
}

// at is interval num's slot, nil when it had no answers.
func (s *series) at(num int64) *slot {
	if s == nil {
		return nil
	}
	sl := &s.slots[num%ChartPoints]
	if sl.num != num || sl.answers == 0 {
		return nil
	}
	return sl
}

func newCharts(interval time.Duration) *charts {
	return &charts{interval: interval, shops: map[int64]*series{}}
}

func (c *charts) num(t time.Time) int64 { return t.UnixNano() / int64(c.interval) }

// observe counts one answer of the reserve route for shop (0: none known)
// at time at.
func (c *charts) observe(at time.Time, shop int64, status int, d time.Duration) {
	if Refusal(status) {
		return
	}
	num := c.num(at)
	created := status == http.StatusCreated
	bucket := sort.SearchFloat64s(latencyBoundsMS[:], float64(d)/float64(time.Millisecond))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.server.observe(num, created, bucket)
	if shop <= 0 {
		return
	}
	s := c.shops[shop]
	if s == nil {
		if len(c.shops) >= ChartShopsMax {
			oldest, seq := int64(0), uint64(math.MaxUint64)
			for id, o := range c.shops {
				if o.seq < seq {
					oldest, seq = id, o.seq
				}
			}
			delete(c.shops, oldest)
			c.forgot = num
		}
		s = &series{}
		c.shops[shop] = s
	}
	s.seq = c.seq
	s.observe(num, created, bucket)
}

// p99 is the 99th percentile of a slot's latencies in milliseconds,
// interpolated linearly within its bucket (as Prometheus'
// histogram_quantile does); past the last bound it is that bound.
func (sl *slot) p99() float64 {
	rank := 0.99 * float64(sl.answers)
	below := 0.0
	for i, n := range sl.hist {
		if n == 0 {
			continue
		}
		lower := 0.0
		if i > 0 {
			lower = latencyBoundsMS[i-1]
		}
		if below+float64(n) >= rank {
			if i == len(latencyBoundsMS) {
				return lower
			}
			return lower + (latencyBoundsMS[i]-lower)*(rank-below)/float64(n)
		}
		below += float64(n)
	}
	return latencyBoundsMS[len(latencyBoundsMS)-1]
}

// chartsView is the charts of one scope (the server, or a shop) as the
// template draws them.
type chartsView struct {
	// Scope names whose answers these are: "server-wide (all shops)" or
	// "shop N"; Server is true for the former.
	Scope  string
	Server bool
	// Src is where the page's script refreshes them.
	Src      string
	Interval string
	Window   string
	End      string // the end of the window, as stamp
	// Forgotten: the shop has no charts kept, and a shop was forgotten
	// (ChartShopsMax) within the window: it may have been this one.
	Forgotten bool
	ShopsMax  int
	Charts    []chartView
}

// chartView is one chart: runs of points (a gap between runs is idle
// time: no answers), axes with their ticks, in a Width×Height box.
type chartView struct {
	ID, Title string
	N         int // points drawn
	Runs      []run
	// LastX and LastY mark the newest point.
	LastX, LastY string
	// Latest is the value of the last interval, when it had answers;
	// Max the largest value drawn (as the caption says them).
	Latest, Max   string
	XTicks        []tick
	YTicks        []tick
	Width, Height int
	// The plot area, and where the ticks' labels go.
	Left, Top, Right, Bottom int
	PlotWidth, PlotHeight    int
	TickX, TickBottom        int
	LabelY                   int
}

// run is consecutive intervals with answers: a polyline, or a point when
// alone.
type run struct {
	Points string
	Single bool
	X, Y   string
}

type tick struct {
	Pos   string
	Label string
}

const (
	chartW, chartH           = 640, 170
	plotL, plotR             = 64, 630
	plotT, plotB             = 10, 146
	chartHoldsID, chartP99ID = "holds-per-second", "reserve-p99"
)

// view draws the ChartPoints intervals that ended by now, for shop (0:
// the whole server).
func (c *charts) view(now time.Time, shop int64) chartsView {
	cur := c.num(now) // in progress: not drawn
	first := cur - ChartPoints
	v := chartsView{Interval: c.interval.String(), Window: span(ChartPoints * c.interval),
		End: stamp(time.Unix(0, cur*int64(c.interval))), ShopsMax: ChartShopsMax}
	holds := make([]float64, ChartPoints)
	p99 := make([]float64, ChartPoints)
	has := make([]bool, ChartPoints)
	c.mu.Lock()
	s := &c.server
	if shop > 0 {
		s = c.shops[shop]
		v.Forgotten = s == nil && c.forgot >= first
	}
	for i := range ChartPoints {
		if sl := s.at(first + int64(i)); sl != nil {
			has[i] = true
			holds[i] = float64(sl.created) / c.interval.Seconds()
			p99[i] = sl.p99()
		}
	}
	c.mu.Unlock()
	if shop > 0 {
		v.Scope = fmt.Sprintf("shop %d", shop)
	} else {
		v.Scope, v.Server = "server-wide (all shops)", true
	}
	v.Charts = []chartView{
		draw(chartHoldsID, "New holds per second", holds, has, "/s", ChartPoints*c.interval),
		draw(chartP99ID, "Reservation p99 latency", p99, has, " ms", ChartPoints*c.interval),
	}
	return v
}

// draw lays out values (has[i]: interval i had answers) over the plot's
// width, the oldest interval at the left, scaled to a round number above
// the largest value.
func draw(id, title string, values []float64, has []bool, unit string, window time.Duration) chartView {
	cv := chartView{ID: id, Title: title, Width: chartW, Height: chartH, Left: plotL, Top: plotT, Right: plotR, Bottom: plotB,
		PlotWidth: plotR - plotL, PlotHeight: plotB - plotT, TickX: plotL - 6, TickBottom: plotB + 4, LabelY: chartH - 6}
	top := 0.0
	for i, v := range values {
		if has[i] {
			top = max(top, v)
			cv.N++
		}
	}
	scale := roundUp(top)
	x := func(i int) float64 { return plotL + float64(i+1)*float64(plotR-plotL)/float64(len(values)) }
	y := func(v float64) float64 { return plotB - v/scale*float64(plotB-plotT) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	for _, t := range []float64{0, scale / 2, scale} {
		cv.YTicks = append(cv.YTicks, tick{Pos: f(y(t)), Label: number(t) + unit})
	}
	cv.XTicks = []tick{{f(plotL), "−" + span(window)}, {f((plotL + plotR) / 2.0), "−" + span(window/2)}, {f(plotR), "now"}}
	var pts []string
	flush := func() {
		switch len(pts) {
		case 0:
		case 1:
			xy := strings.Split(pts[0], ",")
			cv.Runs = append(cv.Runs, run{Single: true, X: xy[0], Y: xy[1]})
		default:
			cv.Runs = append(cv.Runs, run{Points: strings.Join(pts, " ")})
		}
		pts = nil
	}
	for i, v := range values {
		if !has[i] {
			flush()
			continue
		}
		px, py := f(x(i)), f(y(v))
		pts = append(pts, px+","+py)
		cv.LastX, cv.LastY = px, py
	}
	flush()
	if cv.N > 0 {
		cv.Max = number(round1(top)) + unit
		if last := len(values) - 1; has[last] {
			cv.Latest = number(round1(values[last])) + unit
		}
	}
	return cv
}

// roundUp is the smallest of 1, 2, 2.5, 5 times a power of ten at or above
// v (1 for 0).
func roundUp(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// span says a duration as the axis does: "10 min", "30 s".
func span(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return number(d.Seconds()) + " s"
}
