package pgops_test

import (
	"os"
	osexec "os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/holdfast/holdfast/metrics"
	"github.com/holdfast/holdfast/postgres/pgops"
)

const alertsFile = "../../dashboards/alerts.yml"

// ruleFile is the Prometheus rule file format (rulefmt), strictly.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// exported are the metric names holdfast serve exports from this module's
// collectors (engine, pool, sampler, bloat monitor).
func exported(t *testing.T) []string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 200)
	pgops.NewSampler(nil, pgops.SamplerConfig{}).Describe(ch)
	pgops.NewBloatMonitor(nil, pgops.BloatConfig{}).Describe(ch)
	metrics.NewEngine().Describe(ch)
	pgops.NewPoolCollector(nil, "api").Describe(ch)
	close(ch)
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	var known []string
	for d := range ch {
		if m := name.FindStringSubmatch(d.String()); m != nil {
			known = append(known, m[1])
		}
	}
	return known
}

// promQLWords are the PromQL functions, aggregations and keywords the rules
// may use; any other identifier outside label matchers and groupings must
// be an exported metric.
var promQLWords = []string{"sum", "max", "min", "avg", "count", "rate", "irate", "increase", "delta",
	"histogram_quantile", "time", "abs", "clamp_min", "clamp_max", "and", "or", "unless", "on",
	"ignoring", "bool", "group_left", "group_right", "offset", "absent", "vector", "scalar"}

// TestAlertRules: dashboards/alerts.yml is a well-formed Prometheus rule
// file whose expressions name only metrics holdfast exports, and promtool
// accepts it (scripts/setup installs promtool from Debian's prometheus
// package, never starting its server; without promtool only the parser
// check runs).
func TestAlertRules(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	if len(f.Groups) == 0 {
		t.Fatal("no rule groups")
	}
	known := exported(t)
	strip := regexp.MustCompile(`"[^"]*"|\{[^}]*\}|\[[^\]]*\]|\b(by|without)\s*\([^)]*\)`)
	ident := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	seen := map[string]bool{}
	rules := 0
	for _, g := range f.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: needs a name and rules", g.Name)
		}
		for _, r := range g.Rules {
			rules++
			name := r.Alert
			switch {
			case r.Alert == "" || r.Record != "":
				t.Errorf("rule %q: only alerting rules belong here", r.Record)
			case !regexp.MustCompile(`^Holdfast[A-Z][A-Za-z]+$`).MatchString(name):
				t.Errorf("alert %q: name it HoldfastSomething", name)
			case seen[name]:
				t.Errorf("alert %q: duplicate", name)
			}
			seen[name] = true
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("alert %s: for %q: %v", name, r.For, err)
				}
			}
			if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", name, sev)
			}
			if r.Annotations["summary"] == "" || r.Annotations["runbook"] == "" {
				t.Errorf("alert %s: needs summary and runbook annotations", name)
			}
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") || strings.Count(r.Expr, "{") != strings.Count(r.Expr, "}") {
				t.Errorf("alert %s: unbalanced expression %q", name, r.Expr)
			}
			metricsUsed := 0
			for _, id := range ident.FindAllString(strip.ReplaceAllString(r.Expr, " "), -1) {
				if slices.Contains(promQLWords, id) {
					continue
				}
				metricsUsed++
				base := id
				for _, suf := range []string{"_bucket", "_count", "_sum"} {
					if s, ok := strings.CutSuffix(id, suf); ok && slices.Contains(known, s) {
						base = s
					}
				}
				if !slices.Contains(known, base) {
					t.Errorf("alert %s: %s is not a metric holdfast exports", name, id)
				}
			}
			if metricsUsed == 0 {
				t.Errorf("alert %s: expression names no metric: %q", name, r.Expr)
			}
		}
	}
	if rules < 6 {
		t.Fatalf("%d rules; the file lost some", rules)
	}
	if p, err := osexec.LookPath("promtool"); err == nil {
		if out, err := osexec.Command(p, "check", "rules", alertsFile).CombinedOutput(); err != nil {
			t.Fatalf("promtool check rules: %v\n%s", err, out)
		}
	}
}
