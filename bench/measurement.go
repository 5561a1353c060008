package bench

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/bench/hotbench"
)

// What a run measures: each client's tally, merged into a measurement, and
// the percentiles of its latencies (hotbench's, shared with the MySQL
// bench).

// measurement is what a run's clients saw.
type measurement struct {
	holds, soldOut, errors int64
	codes                  map[string]int64
	lat                    []time.Duration
	confirmed              int64         // units of every success, outside the window too
	window                 time.Duration // a timed run's window; zero for counted runs
	elapsed                time.Duration // a counted run's time to answer every attempt
	waits                  map[string]float64
	goCPU, pgCPU, otherCPU float64
	probe                  *hotbench.Probe // the window's cost
	backend                time.Duration   // the run database's backends' CPU in the window
}

func (m *measurement) fill(res *Result) {
	res.Holds, res.SoldOut, res.Errors = m.holds, m.soldOut, m.errors
	if len(m.codes) > 0 {
		res.ErrorsByCode = m.codes
	}
	if m.window > 0 {
		res.HoldsPerSec = float64(m.holds) / m.window.Seconds()
	}
	slices.Sort(m.lat)
	res.P50ms, res.P95ms, res.P99ms = hotbench.Ms(hotbench.Percentile(m.lat, 0.50)), hotbench.Ms(hotbench.Percentile(m.lat, 0.95)), hotbench.Ms(hotbench.Percentile(m.lat, 0.99))
	if n := len(m.lat); n > 0 {
		res.Maxms = hotbench.Ms(m.lat[n-1])
	}
	res.Waits, res.GoCPU, res.PgCPU, res.OtherCPU = m.waits, m.goCPU, m.pgCPU, m.otherCPU
	res.Cost = m.probe.Cost(m.holds)
	if m.holds > 0 && m.backend > 0 {
		res.BackendCPUus = math.Round(float64(m.backend)/1e3/float64(m.holds)*10) / 10
	}
}

// tally is one client's share of a measurement.
type tally struct {
	holds, soldOut, errors, confirmed int64
	codes                             map[string]int64
	lat                               []time.Duration
}

func (t *tally) record(units int, err error, d time.Duration, inWindow bool) {
	if err == nil {
		t.confirmed += int64(units)
	}
	if !inWindow {
		return
	}
	t.lat = append(t.lat, d)
	switch {
	case err == nil:
		t.holds++
	case errors.Is(err, holdfast.ErrInsufficientStock):
		t.soldOut++
	default:
		t.errors++
		if t.codes == nil {
			t.codes = map[string]int64{}
		}
		t.codes[errorCode(err)]++
	}
}

func merge(ts []*tally) *measurement {
	m := &measurement{}
	for _, t := range ts {
		m.holds += t.holds
		m.soldOut += t.soldOut
		m.errors += t.errors
		m.confirmed += t.confirmed
		m.lat = append(m.lat, t.lat...)
		for k, v := range t.codes {
			if m.codes == nil {
				m.codes = map[string]int64{}
			}
			m.codes[k] += v
		}
	}
	return m
}
