package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/bench/hotbench"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestHotTargetRuns runs hotbench — the MySQL bench's runner — on the
// PostgreSQL engine: every scenario and engine strategy briefly, each run
// measured against a ceiling measured once, every audit passed. Speed is
// not asserted.
func TestHotTargetRuns(t *testing.T) {
	target := NewHotTarget(pgtest.ServerURL())
	defer target.Close()
	rep, err := hotbench.Run(context.Background(), target, hotbench.Options{
		Clients:  []int{2},
		Duration: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	runs, ceilings, limits := 0, 0, 0
	for _, r := range rep.Results {
		switch {
		case r.Scenario == "ceiling":
			ceilings++
			if r.HoldsPerSec <= 0 {
				t.Errorf("ceiling measured no commits: %+v", r)
			}
		case r.Scenario == hotbench.ScenarioLimit:
			limits++
			checkCost(t, r)
			if r.Clients != hotbench.LimitConns*hotbench.LimitBatch || r.Holds%hotbench.LimitBatch != 0 {
				t.Errorf("limit %s: %+v; want %d in flight and whole batches", r.Strategy, r, hotbench.LimitConns*hotbench.LimitBatch)
			}
		default:
			runs++
			if r.Holds == 0 || r.Errors != 0 || r.Oversold != 0 || r.Problem != "" || r.Ceiling <= 0 {
				t.Errorf("%s %s: %+v", r.Strategy, r.Scenario, r)
			}
			checkCost(t, r)
		}
	}
	if want := len(hotbench.Scenarios()) * len(target.Strategies()); runs != want || ceilings != 1 || limits != len(hotbench.LimitStripeCounts()) {
		t.Errorf("%d runs, %d ceilings and %d limit rows; want %d, 1 and %d", runs, ceilings, limits, want, len(hotbench.LimitStripeCounts()))
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"×limit", "db µs/h", "go µs/h", "log B/h", "limit ", hotbench.LimitStrategy(hotbench.LimitStripes)} {
		if !strings.Contains(table.String(), col) {
			t.Errorf("table has no %q:\n%s", col, table.String())
		}
	}
	if rep.Engine != "PostgreSQL" || rep.Server == "" {
		t.Errorf("report names engine %q on server %q", rep.Engine, rep.Server)
	}
}

// checkCost fails unless r's cost per hold was measured: the server is
// local (a private test server), so its CPU and log position are readable.
// Plausible, not fast: each is positive and below a bound no hold reaches
// (a second of CPU, a megabyte of log).
func checkCost(t *testing.T, r *hotbench.Result) {
	t.Helper()
	for name, v := range map[string]float64{"server CPU µs": r.ServerCPUus, "Go CPU µs": r.GoCPUus, "log bytes": r.LogBytes} {
		if name == "log bytes" && r.Scenario == hotbench.ScenarioAvail && v >= 0 && v <= 1e6 {
			continue // availability reads write nothing of their own: 0 is plausible
		}
		if v <= 0 || v > 1e6 {
			t.Errorf("%s %s c=%d: %s per hold %v; want > 0 and plausible", r.Scenario, r.Strategy, r.Clients, name, v)
		}
	}
}

// TestAvailabilityVsReserve measures availability reads against
// reservations on one hot key in one run (issue #30 item 4's bench row:
// reads/s ÷ holds/s, target ≥ 10×) and prints the table. It runs only
// when HOLDFAST_BENCH_AVAIL is set, e.g.
//
//	HOLDFAST_BENCH_AVAIL=1 go test -count=1 -run TestAvailabilityVsReserve -v ./bench
//
// (HOLDFAST_BENCH_AVAIL_CLIENTS: clients, default 8). It fails on a run's
// error or failed audit, not on speed.
func TestAvailabilityVsReserve(t *testing.T) {
	if os.Getenv("HOLDFAST_BENCH_AVAIL") == "" {
		t.Skip("a bench: set HOLDFAST_BENCH_AVAIL=1 to run it")
	}
	clients := 8
	if s := os.Getenv("HOLDFAST_BENCH_AVAIL_CLIENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		clients = n
	}
	target := NewHotTarget(pgtest.ServerURL())
	defer target.Close()
	rep, err := hotbench.Run(context.Background(), target, hotbench.Options{
		Scenarios:  []string{hotbench.ScenarioHot, hotbench.ScenarioAvail},
		Strategies: []string{"batch", "counter"},
		Clients:    []int{clients},
		Duration:   5 * time.Second,
	})
	if rep != nil {
		var b strings.Builder
		_ = rep.WriteTable(&b)
		t.Log("\n" + b.String())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestAvailScenario runs avail beside hot as `holdfast bench --scenarios
// hot,avail` does: engine strategies only, every read checked (hotbench's
// avail fails a read that answers the wrong sellable), the cost per read
// measured, and the ratio to hot's holds/s under the table.
func TestAvailScenario(t *testing.T) {
	t.Parallel()
	o := smokeOptions()
	o.Scenarios = []string{ScenarioHot, ScenarioAvail}
	o.Strategies = []string{string(holdfast.StrategyBatch), "pessimistic"}
	o.Duration = 300 * time.Millisecond
	o.NoLimit = true
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	avail := 0
	for _, r := range rep.Runs {
		if r.Scenario != ScenarioAvail {
			continue
		}
		avail++
		if r.Strategy != string(holdfast.StrategyBatch) || r.Holds == 0 || r.HoldsPerSec <= 0 || r.Errors != 0 || r.Failed() || r.ServerCPUus <= 0 || r.GoCPUus <= 0 {
			t.Errorf("avail run: %+v", r)
		}
	}
	if avail != 1 {
		t.Fatalf("%d avail runs, want 1 (engine strategies only)", avail)
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("availability vs reserve, batch at %d clients: ", smokeClients); !strings.Contains(table.String(), want) {
		t.Errorf("table has no %q:\n%s", want, table.String())
	}
}
