package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
		{[]string{"bench", "--http", "--soak", "--fairness"}, "runs the service alone"},
		{[]string{"bench", "--http", "--soak", "--redis"}, "runs the service alone"},
		{[]string{"bench", "--redis", "--soak"}, "--redis goes with"},
		{[]string{"bench", "--redis", "--redis-attempts", "0"}, "--redis-attempts must be between"},
		{[]string{"bench", "--clients", "5000"}, "at most 4096"},
		{[]string{"bench", "--http", "--soak", "--soak-ttl", "1500ms"}, "--soak-ttl must be whole seconds"},
		{[]string{"bench", "--http", "--soak", "--soak-ttl", "2h"}, "--soak-ttl must be whole seconds"},
		// Output paths are checked before the run, not after it.
		{[]string{"bench", "--json", "/nonexistent/dir/out.json", "--scenarios", "hot", "--strategies", "counter", "--clients", "1", "--duration", "100ms"}, "--json /nonexistent/dir/out.json: directory /nonexistent/dir does not exist"},
		{[]string{"bench", "--svg", "/nonexistent/dir/out.svg", "--scenarios", "hot", "--strategies", "counter", "--clients", "1", "--duration", "100ms"}, "--svg /nonexistent/dir/out.svg: directory"},
		{[]string{"bench", "--engine", "mariadb", "--json", "/nonexistent/dir/out.json", "--scenarios", "hot", "--strategies", "counter", "--clients", "1", "--duration", "100ms"}, "--json /nonexistent/dir/out.json: directory"},
		{[]string{"bench", "--json", os.TempDir(), "--scenarios", "hot", "--clients", "1", "--duration", "100ms"}, "is a directory"},
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
	serveFromBuild(t)
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

// TestBenchHTTPSoak: `bench --http --soak` prints a row per sample, the
// verdict with the invariant check, and writes --json. A 2 s soak: the
// exit status (1 when the ratio is missed) is not asserted, only that it is
// the soak's own (0 or 1, never a usage or run error).
func TestBenchHTTPSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and serves for several seconds")
	}
	serveFromBuild(t)
	js := filepath.Join(t.TempDir(), "soak.json")
	code, out, errOut := run(t, "bench", "--http", "--soak", "--clients", "4", "--soak-duration", "2s", "--json", js)
	if code != 0 && !(code == 1 && strings.Contains(errOut, "service soak target not met")) {
		t.Fatalf("bench --http --soak: exit %d\n%s%s", code, out, errOut)
	}
	var rep httpbench.SoakReport
	b, err := os.ReadFile(js)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil || len(rep.Samples) == 0 || !rep.InvariantOK {
		t.Fatalf("--json: %v, %d samples, invariant ok %v\n%s", err, len(rep.Samples), rep.InvariantOK, b)
	}
	// How many samples fit in 2 s depends on the machine: as many rows as
	// the report has samples.
	if rows := regexp.MustCompile(`(?m)^\s+[\d.]+m?s\s+\d+\s`).FindAllString(out, -1); len(rows) != len(rep.Samples) {
		t.Errorf("bench --http --soak: %d sample rows, the report has %d samples:\n%s", len(rows), len(rep.Samples), out)
	}
	if !strings.Contains(out, "last/first holds/s") || !strings.Contains(out, "invariant: 1 keys, 0 violations") {
		t.Errorf("bench --http --soak: no verdict with the invariant:\n%s", out)
	}
}

// serveFromBuild points bench at a private cluster and at a holdfast binary
// built for t, for the serve process of `bench --http`.
func serveFromBuild(t *testing.T) {
	t.Helper()
	privateDB(t)
	bin, err := httpbench.Build(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := benchBinary
	benchBinary = func() (string, error) { return bin, nil }
	t.Cleanup(func() { benchBinary = old })
}

// TestBenchSaysHowLong: bench's table states its runs and the least time
// they take before it starts (the defaults take 10 minutes).
func TestBenchSaysHowLong(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://holdfast:pw@"+freeAddr(t)+"/postgres") // fails right after the estimate
	t.Setenv("HOLDFAST_ENGINE", "")
	_, _, errOut := run(t, "bench")
	if !strings.Contains(errOut, "bench: 120 runs of 5s (5 scenarios × 6 strategies × 4 client counts): at least 10m0s; narrow it with --scenarios") {
		t.Errorf("bench with the defaults does not say how long it takes:\n%s", errOut)
	}
}
