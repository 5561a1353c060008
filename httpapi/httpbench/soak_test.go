package httpbench_test

import (
	"context"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/httpapi/httpbench"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestSoakCounted runs the service soak for a fixed amount of work (4
// samples of 300 answers at 4 clients: no time window, so a slow machine
// cannot make it red) through a real `holdfast serve`, and checks every
// sample saw the service, serve's process and the database, and that the
// invariant check ran. Speeds are reported, never asserted.
func TestSoakCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and serves: not with -short")
	}
	t.Parallel()
	db := pgtest.DB(t, 4)
	var rows strings.Builder
	rep, err := httpbench.Soak(context.Background(), httpbench.Options{DatabaseURL: db.URL, Clients: 4},
		httpbench.SoakOptions{Samples: 4, Answers: 300, Rows: &rows})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if len(rep.Samples) != 4 {
		t.Fatalf("%d samples, want 4", len(rep.Samples))
	}
	if got := strings.Count(rows.String(), "\n"); got != 1+4 {
		t.Errorf("rows printed as taken: %d lines, want a header and 4 rows:\n%s", got, rows.String())
	}
	for i, s := range rep.Samples {
		var answers int64 = s.Holds
		for _, n := range s.Other {
			answers += n
		}
		switch {
		case answers < 300:
			t.Errorf("sample %d: %d answers, want at least 300: %+v", i, answers, s)
		case s.Holds == 0 || s.HoldsPerSec <= 0 || s.P50ms <= 0 || s.P99ms < s.P50ms || s.Seconds <= 0:
			t.Errorf("sample %d: no service figures: %+v", i, s)
		case s.ServeRSSKiB <= 0:
			t.Errorf("sample %d: no serve RSS: %+v", i, s)
		case s.Held < s.Holds || s.HoldsBytes <= 0:
			t.Errorf("sample %d: no database figures (holds expire after 15 minutes, so all are still held): %+v", i, s)
		}
	}
	if rep.Window != 1 || rep.FirstPerSec <= 0 || rep.LastPerSec <= 0 || rep.LastVsFirst <= 0 || rep.P99ms <= 0 {
		t.Errorf("no verdict figures: window %d, first %.0f, last %.0f, ratio %.2f, p99 %.2f ms", rep.Window, rep.FirstPerSec, rep.LastPerSec, rep.LastVsFirst, rep.P99ms)
	}
	if rep.Invariant == "" || !rep.InvariantOK || rep.Oversold != 0 {
		t.Errorf("invariant: %q ok %v, oversold %d", rep.Invariant, rep.InvariantOK, rep.Oversold)
	}
	if !strings.Contains(rep.Invariant, "1 keys") {
		t.Errorf("the invariant check did not see the soak's key: %q", rep.Invariant)
	}
}
