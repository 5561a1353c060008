package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/holdfast/holdfast/bench/hotbench"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestRunReportsCost runs the bench briefly, timed (the durable limit is a
// timed run), and expects every run and both durable-limit rows to carry a
// plausible cost per hold — the test server is local, so the server's CPU
// and WAL position are readable — in the table and the JSON. Speed is not
// asserted.
func TestRunReportsCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rep, err := Run(ctx, Options{
		URL:        pgtest.ServerURL(),
		Scenarios:  []string{ScenarioHot},
		Strategies: []string{"counter", "batch"},
		Clients:    []int{4},
		Duration:   500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs; want 2", len(rep.Runs))
	}
	plausible := func(what string, v float64) {
		t.Helper()
		if v <= 0 || v > 1e6 {
			t.Errorf("%s: %v per hold; want > 0 and below a second of CPU or a megabyte of WAL", what, v)
		}
	}
	for _, r := range rep.Runs {
		plausible(r.Strategy+" server CPU µs", r.ServerCPUus)
		plausible(r.Strategy+" backend CPU µs", r.BackendCPUus)
		plausible(r.Strategy+" Go CPU µs", r.GoCPUus)
		plausible(r.Strategy+" WAL bytes", r.LogBytes)
		if r.BackendCPUus > r.ServerCPUus*1.5 {
			t.Errorf("%s: backends %v µs per hold, more than the whole server's %v", r.Strategy, r.BackendCPUus, r.ServerCPUus)
		}
	}
	if len(rep.Limits) != len(hotbench.LimitStripeCounts()) {
		t.Fatalf("%d durable-limit rows; want %d", len(rep.Limits), len(hotbench.LimitStripeCounts()))
	}
	for _, l := range rep.Limits {
		if l.HoldsPerSec <= 0 || l.Holds%hotbench.LimitBatch != 0 || l.Errors != 0 {
			t.Errorf("limit %s: %+v", l.Strategy, l)
		}
		plausible("limit "+l.Strategy+" server CPU µs", l.ServerCPUus)
		plausible("limit "+l.Strategy+" Go CPU µs", l.GoCPUus)
		plausible("limit "+l.Strategy+" WAL bytes", l.LogBytes)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"x limit", "db µs/h", "be µs/h", "go µs/h", "wal B/h", "limit", "8 rows"} {
		if !strings.Contains(table.String(), col) {
			t.Errorf("table has no %q:\n%s", col, table.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Runs   []map[string]any `json:"runs"`
		Limits []map[string]any `json:"durable_limits"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"server_cpu_us_per_hold", "backend_cpu_us_per_hold", "go_cpu_us_per_hold", "log_bytes_per_hold"} {
		if v, _ := back.Runs[1][k].(float64); v <= 0 {
			t.Errorf("JSON run has %s = %v", k, back.Runs[1][k])
		}
	}
	if v, _ := back.Limits[0]["holds_per_sec"].(float64); v <= 0 {
		t.Errorf("JSON limit: %v", back.Limits[0])
	}
}
