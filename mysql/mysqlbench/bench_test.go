package mysqlbench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast/holdfast/mysql/mysqlbench"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// TestRunAudits runs every scenario and strategy briefly and expects each
// run measured, the ceiling measured once per client count, and every audit
// passed. Speed is not asserted.
func TestRunAudits(t *testing.T) {
	rep, err := mysqlbench.Run(context.Background(), mysqlbench.Options{
		Server:   mysqltest.Server(),
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
	if want := len(mysqlbench.Scenarios()) * len(mysqlbench.Strategies()); runs != want || ceilings != 1 {
		t.Errorf("%d runs and %d ceilings; want %d and 1", runs, ceilings, want)
	}
}

func TestRunRejectsUnknown(t *testing.T) {
	for _, o := range []mysqlbench.Options{
		{Server: mysqltest.Server(), Scenarios: []string{"spread"}},
		{Server: mysqltest.Server(), Strategies: []string{"slots"}},
		{Server: mysqltest.Server(), Clients: []int{0}},
		{},
	} {
		if _, err := mysqlbench.Run(context.Background(), o); err == nil || errors.Is(err, mysqlbench.ErrIncorrect) {
			t.Errorf("%+v: %v; want a validation error", o, err)
		}
	}
}
