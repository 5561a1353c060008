package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
	want := `
# HELP holdfast_engine_retries_total Transactions the engine ran again, by route and SQLSTATE ("connection" for a lost connection).
# TYPE holdfast_engine_retries_total counter
holdfast_engine_retries_total{route="reserve",sqlstate="40P01"} 1
# HELP holdfast_holds_expired_total Holds the sweeper expired.
# TYPE holdfast_holds_expired_total counter
holdfast_holds_expired_total 4
# HELP holdfast_replenished_units_total Units added to keys' allocation buffers, inline (on a buyer's reservation) or in the background.
# TYPE holdfast_replenished_units_total counter
holdfast_replenished_units_total{mode="background"} 7
holdfast_replenished_units_total{mode="inline"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "holdfast_engine_retries_total", "holdfast_holds_expired_total", "holdfast_replenished_units_total"); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "holdfast_engine_op_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == "held" && m.GetHistogram().GetSampleCount() != 2 {
				t.Fatalf("reserve/held count %d", m.GetHistogram().GetSampleCount())
			}
		}
		return
	}
	t.Fatal("no op histogram")
}
