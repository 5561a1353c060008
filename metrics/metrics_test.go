package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/metrics"
)

func TestEngine(t *testing.T) {
	e := metrics.NewEngine()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	var obs holdfast.Observer = e
	obs.Op("reserve", "held", 3*time.Millisecond)
	obs.Op("reserve", "held", 4*time.Millisecond)
	obs.Op("claim", "claimed", time.Millisecond)
	obs.Retry("reserve", "40P01")
	obs.Replenished(holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 3}, true, 5)
	obs.Replenished(holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 3}, false, 7)
	obs.Expired(4)
	obs.Claimed(90 * time.Second)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"holdfast_engine_retries_total", map[string]string{"op": "reserve", "sqlstate": "40P01"}, 1},
		{"holdfast_engine_retries_total", map[string]string{"op": "claim", "sqlstate": "40P01"}, 0},
		{"holdfast_holds_expired_total", nil, 4},
		{"holdfast_replenished_units_total", map[string]string{"mode": "background"}, 7},
		{"holdfast_replenished_units_total", map[string]string{"mode": "inline"}, 5},
	} {
		if got, ok := value(t, reg, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if got, ok := value(t, reg, "holdfast_engine_op_duration_seconds", map[string]string{"op": "reserve", "outcome": "held"}); !ok || got != 2 {
		t.Fatalf("reserve/held count %v (present %v), want 2", got, ok)
	}
}

// TestSeriesAtZero: a fresh Engine exports its known series at zero, so
// dashboards show 0 rather than no data before the first event.
func TestSeriesAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewEngine())
	for _, op := range metrics.KnownOps {
		if got, ok := value(t, reg, "holdfast_engine_op_duration_seconds", map[string]string{"op": op[0], "outcome": op[1]}); !ok || got != 0 {
			t.Errorf("op %v: %v present %v", op, got, ok)
		}
	}
	for _, op := range metrics.KnownRetryOps {
		for _, state := range metrics.KnownRetrySQLStates {
			if got, ok := value(t, reg, "holdfast_engine_retries_total", map[string]string{"op": op, "sqlstate": state}); !ok || got != 0 {
				t.Errorf("retries %s %s: %v present %v", op, state, got, ok)
			}
		}
	}
	for _, name := range []string{"holdfast_holds_expired_total", "holdfast_claim_hold_age_seconds"} {
		if _, ok := value(t, reg, name, nil); !ok {
			t.Errorf("%s missing", name)
		}
	}
	if got, ok := value(t, reg, "holdfast_replenished_units_total", map[string]string{"mode": "inline"}); !ok || got != 0 {
		t.Errorf("replenished inline: %v present %v", got, ok)
	}
}

// value is the value (a histogram's count) of the series of name with
// exactly labels.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}
