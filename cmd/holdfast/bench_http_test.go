package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/httpapi/httpbench"
)

// TestBenchFlagErrors: --http and --redis combinations are checked before
// anything starts.
func TestBenchFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--fairness"}, "--fairness goes with --http"},
		{[]string{"bench", "--http", "--clients", "8,64"}, "--http runs at one --clients count"},
		{[]string{"bench", "--http", "--soak"}, "pick one"},
		{[]string{"bench", "--redis", "--soak"}, "--redis goes with"},
		{[]string{"bench", "--redis", "--redis-attempts", "0"}, "--redis-attempts must be between"},
		{[]string{"bench", "--clients", "5000"}, "at most 4096"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestBenchRedisRow: the strategy table with the Redis design's row beside
// holdfast's best strategy on hot, same run, on a private cluster and a
// private redis-server (or REDIS_URL). Small and short: it checks the
// wiring and the table, not speed.
func TestBenchRedisRow(t *testing.T) {
	privateDB(t)
	code, out, errOut := run(t, "bench", "--scenarios", "hot", "--strategies", "counter", "--clients", "2",
		"--duration", "500ms", "--redis", "--redis-attempts", "300")
	if code != 0 {
		t.Fatalf("bench --redis: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "redis holds/s") || !regexp.MustCompile(`(?m)^\s*2\s+\d+\s+\d+\s+counter\s+[\d.]+×`).MatchString(out) {
		t.Fatalf("bench --redis: no Redis row beside counter at 2 clients:\n%s", out)
	}
}

// TestBenchHTTP: `bench --http` runs httpbench's three sides (and the
// fairness run, and the Redis row) against a built holdfast binary on a
// private cluster and prints its report.
func TestBenchHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and serves for several seconds")
	}
	privateDB(t)
	bin, err := httpbench.Build(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := benchBinary
	benchBinary = func() (string, error) { return bin, nil }
	t.Cleanup(func() { benchBinary = old })
	code, out, errOut := run(t, "bench", "--http", "--clients", "4", "--duration", "1s", "--fairness", "--redis", "--redis-attempts", "200")
	if code != 0 {
		t.Fatalf("bench --http: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"hot, 4 clients", "library", "service", "ceiling", "fairness: steady shop p99", "redis", "service/redis"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench --http output lacks %q:\n%s", want, out)
		}
	}
}
