package faulttest_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/holdfast/holdfast/postgres/faulttest"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.MainHeavy(m) }

// scenarios are the fault scenarios; TestFaults runs them in parallel and
// then logs the fault tally of the whole run.
var scenarios = map[string]func(t *testing.T){}

func scenario(name string, fn func(t *testing.T)) bool {
	scenarios[name] = fn
	return true
}

func TestFaults(t *testing.T) {
	t.Run("group", func(t *testing.T) {
		for name, fn := range scenarios {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fn(t)
			})
		}
	})
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	table := faulttest.Total.String()
	t.Logf("fault tally:\n%s", table)
	if p := os.Getenv("HOLDFAST_FAULT_REPORT"); p != "" {
		if f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "faulttest (%s):\n%s", t.Name(), table)
			f.Close()
		}
	}
}
