package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
	runs, ceilings := 0, 0
	for _, r := range rep.Results {
		switch {
		case r.Scenario == "ceiling":
			ceilings++
			if r.HoldsPerSec <= 0 {
				t.Errorf("ceiling measured no commits: %+v", r)
			}
		default:
			runs++
			if r.Holds == 0 || r.Errors != 0 || r.Oversold != 0 || r.Problem != "" || r.Ceiling <= 0 {
				t.Errorf("%s %s: %+v", r.Strategy, r.Scenario, r)
			}
		}
	}
	if want := len(hotbench.Scenarios()) * len(target.Strategies()); runs != want || ceilings != 1 {
		t.Errorf("%d runs and %d ceilings; want %d and 1", runs, ceilings, want)
	}
	if rep.Engine != "PostgreSQL" || rep.Server == "" {
		t.Errorf("report names engine %q on server %q", rep.Engine, rep.Server)
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
