package bench

import (
	"context"
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
