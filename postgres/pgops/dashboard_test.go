package pgops_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast/metrics"
	"github.com/holdfast/holdfast/postgres/pgops"
)

// TestDashboardNames: every holdfast_pg_*, holdfast_ops_* and engine metric
// the Grafana dashboard queries is one this code exports.
func TestDashboardNames(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../dashboards/holdfast.json")
	if err != nil {
		t.Fatal(err)
	}
	var known []string
	ch := make(chan *prometheus.Desc, 100)
	pgops.NewSampler(nil, pgops.SamplerConfig{}).Describe(ch)
	pgops.NewBloatMonitor(nil, pgops.BloatConfig{}).Describe(ch)
	metrics.NewEngine().Describe(ch)
	close(ch)
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if m := name.FindStringSubmatch(d.String()); m != nil {
			known = append(known, m[1])
		}
	}
	used := regexp.MustCompile(`holdfast_(pg|ops|engine|replenished|holds|claim)_[a-z_]+`).FindAllString(string(b), -1)
	if len(used) == 0 {
		t.Fatal("dashboard queries none of the exported metrics")
	}
	for _, u := range used {
		base := u
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			if s, ok := strings.CutSuffix(u, suf); ok && slices.Contains(known, s) {
				base = s
			}
		}
		if !slices.Contains(known, base) {
			t.Errorf("dashboard uses %s, which nothing exports (exported: %v)", u, known)
		}
	}
}
