package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDemoPodsScenario: demo --scenario pods starts three pods on private
// PostgreSQL clusters, runs a flash sale on one of thirty shops, moves it
// to another pod mid-sale and ends its summary with the six lines of #28:
// nothing acknowledged lost or applied twice, nothing oversold, the move's
// fence measured, the other shops' p99 before and during the move.
func TestDemoPodsScenario(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	code, out, errOut := run(t, "demo", "--scenario", "pods", "--buyers", "300", "--units", "120", "--concurrency", "8")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr (tail):\n%s", code, out, tail(errOut, 3000))
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 6 {
		t.Fatalf("summary too short:\n%s", out)
	}
	last := strings.Join(lines[len(lines)-6:], "\n")
	m := regexp.MustCompile(`^moved shop (\d+)\nacknowledged lost (\d+)\napplied twice (\d+)\noversold (\d+)\nfence max (\d+) ms\nother shops p99 (\d+\.\d) ms \(before (\d+\.\d) ms\)$`).FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("the summary's last lines:\n%s\nwant moved shop N / acknowledged lost N / applied twice N / oversold N / fence max X ms / other shops p99 X ms (before Y ms)", last)
	}
	num := func(i int) float64 {
		v, err := strconv.ParseFloat(m[i], 64)
		if err != nil {
			t.Fatalf("%q: %v", m[i], err)
		}
		return v
	}
	if num(1) != 1 {
		t.Errorf("moved shop %s, want the shop on sale, 1", m[1])
	}
	for i, what := range map[int]string{2: "acknowledged lost", 3: "applied twice", 4: "oversold"} {
		if num(i) != 0 {
			t.Errorf("%s %s, want 0", what, m[i])
		}
	}
	if num(5) <= 0 {
		t.Errorf("fence max %s ms, want a measured fence", m[5])
	}
	if num(6) <= 0 || num(7) <= 0 {
		t.Errorf("other shops p99 %s ms (before %s ms): want both measured", m[6], m[7])
	}
	// The checker judged the sale's answers: some held, some claimed.
	if !regexp.MustCompile(`checked +[1-9]\d* acknowledged answers against pod b's rows`).MatchString(out) {
		t.Errorf("no acknowledged answers checked against pod b:\n%s", out)
	}
	// The move was mid-sale: calls of the sale were in flight during the
	// fence.
	if fm := regexp.MustCompile(`fenced calls +(\d+) `).FindStringSubmatch(out); fm == nil || fm[1] == "0" {
		t.Errorf("no call of the sale was in flight during the fence:\n%s", out)
	}
	t.Log(last)
}

func TestDemoPodsUsage(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--scenario", "pods", "--engine", "mariadb"}, "--engine does not apply to --scenario pods"},
		{[]string{"demo", "--moves", "2"}, "--moves applies to --scenario pods only"},
		{[]string{"demo", "--scenario", "pods", "--moves", "0"}, "--moves must be between 1 and 5"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
