package mysqlbench_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/holdfast/holdfast/bench/hotbench"
	"github.com/holdfast/holdfast/mysql/mysqlbench"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// TestRunAudits runs every scenario and strategy briefly and expects each
// run measured, the ceiling measured once per client count, and every audit
// passed. Speed is not asserted.
func TestRunAudits(t *testing.T) {
	target := mysqlbench.New(mysqltest.Server())
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
}

func TestRunRejectsUnknown(t *testing.T) {
	target := mysqlbench.New(mysqltest.Server())
	defer target.Close()
	for _, o := range []hotbench.Options{
		{Scenarios: []string{"spread"}},
		{Strategies: []string{"slots"}},
		{Clients: []int{0}},
	} {
		if _, err := hotbench.Run(context.Background(), target, o); err == nil || errors.Is(err, hotbench.ErrIncorrect) {
			t.Errorf("%+v: %v; want a validation error", o, err)
		}
	}
	// No server configuration: an error, not a panic.
	if _, err := hotbench.Run(context.Background(), mysqlbench.New(nil), hotbench.Options{}); err == nil {
		t.Error("nil server: want an error")
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
