package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/pgtest"
)

// TestDemoFailoverScenario: demo --scenario failover runs the flash sale on
// a private Patroni cluster, kills the primary mid-sale and ends its
// summary with the four lines of #27, nothing lost, nothing oversold.
func TestDemoFailoverScenario(t *testing.T) {
	release := pgtest.Heavy() // a three-node cluster keeps every core busy
	defer release()
	t.Setenv("DATABASE_URL", "")
	code, out, errOut := run(t, "demo", "--scenario", "failover", "--buyers", "1500", "--units", "800", "--concurrency", "16")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr (tail):\n%s", code, out, tail(errOut, 3000))
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 4 {
		t.Fatalf("summary too short:\n%s", out)
	}
	last := strings.Join(lines[len(lines)-4:], "\n")
	want := regexp.MustCompile(`^acknowledged lost 0\noversold 0\nfailovers 1\nunavailable max \d+\.\ds$`)
	if !want.MatchString(last) {
		t.Fatalf("the summary's last lines:\n%s\nwant acknowledged lost 0 / oversold 0 / failovers 1 / unavailable max X.Xs", last)
	}
	t.Log(last)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestDemoFailoverUsage(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--scenario", "failover", "--engine", "mariadb"}, "--engine does not apply to --scenario failover"},
		{[]string{"demo", "--failovers", "2"}, "--failovers applies to --scenario failover only"},
		{[]string{"demo", "--scenario", "failover", "--failovers", "0"}, "--failovers must be between 1 and 10"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
