package mysqlbench_test

import (
	"context"
	"errors"
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
