package console

import (
	"html/template"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChartsPerShopGapsRefusals: a shop's charts count its own answers,
// the server's every shop's; refusals (a bad key's 401 held a second) are
// in neither; an interval without answers is a gap between runs; the
// drawing has both axes with their scale. The clock is injected.
func TestChartsPerShopGapsRefusals(t *testing.T) {
	c := newCharts(time.Second)
	t0 := time.Unix(1_800_000_000, 0)
	ms := time.Millisecond
	c.observe(t0, 1, 201, 10*ms)
	c.observe(t0.Add(100*ms), 1, 201, 20*ms)
	c.observe(t0.Add(time.Second), 1, 409, 30*ms) // sold out: an answer, no new hold
	c.observe(t0.Add(5*time.Second), 1, 201, 10*ms)
	c.observe(t0.Add(5*time.Second), 2, 201, 40*ms)
	for _, st := range []int{400, 401, 403, 413, 415, 422} {
		c.observe(t0.Add(2*time.Second), 0, st, time.Second)
		c.observe(t0.Add(2*time.Second), 1, st, time.Second)
	}
	now := t0.Add(6 * time.Second)

	one := c.view(now, 1)
	holds, p99 := one.Charts[0], one.Charts[1]
	if one.Scope != "shop 1" || one.Server {
		t.Errorf("shop 1's scope %q (server %v)", one.Scope, one.Server)
	}
	if holds.N != 3 || len(holds.Runs) != 2 || holds.Runs[0].Single || !holds.Runs[1].Single {
		t.Errorf("shop 1's holds: %d points in runs %+v, want 3 in a line of 2 and a single point after the gap", holds.N, holds.Runs)
	}
	if holds.Max != "2/s" || holds.Latest != "1/s" {
		t.Errorf("shop 1's holds: max %q, latest %q; want 2/s and 1/s", holds.Max, holds.Latest)
	}
	if max, err := strconv.ParseFloat(strings.TrimSuffix(p99.Max, " ms"), 64); p99.N != 3 || err != nil || max > 30 {
		t.Errorf("shop 1's p99: %d points, max %q (refusals counted?)", p99.N, p99.Max)
	}
	if p := c.shops[1].at(c.num(t0.Add(time.Second))).p99(); p < 20 || p > 30 {
		t.Errorf("the p99 of one answer of 30 ms is %.1f ms, want within its bucket (20, 30]", p)
	}
	if got := ticks(holds.YTicks); got != "0/s 1/s 2/s" {
		t.Errorf("holds' y ticks %q", got)
	}
	if got := ticks(holds.XTicks); got != "−2 min −1 min now" {
		t.Errorf("holds' x ticks %q", got)
	}

	server := c.view(now, 0)
	if !server.Server || server.Charts[0].N != 3 || server.Charts[0].Latest != "2/s" {
		t.Errorf("server-wide: %+v", server.Charts[0])
	}
	if sl := c.server.at(c.num(t0.Add(2 * time.Second))); sl != nil {
		t.Errorf("the refusals' interval has %d answers server-wide, want none", sl.answers)
	}
	if idle := c.view(now, 3); idle.Charts[0].N != 0 || idle.Charts[1].N != 0 || len(idle.Charts[0].Runs) != 0 || idle.Forgotten {
		t.Errorf("an idle shop's charts: %+v", idle.Charts)
	}
	// Past the window, nothing is left.
	if late := c.view(t0.Add((ChartPoints+6)*time.Second), 1); late.Charts[0].N != 0 {
		t.Errorf("%d points a window later", late.Charts[0].N)
	}

	// The templates draw it.
	tpl := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/charts.html", "templates/overview.html"))
	var b strings.Builder
	one.Src = "/console/shops/1/charts"
	if err := tpl.ExecuteTemplate(&b, "charts", one); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-points="3"`, "<polyline", `class="point"`, ">now</text>", ">2/s</text>", "shop 1", " UTC"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the charts' HTML lacks %q:\n%s", want, b.String())
		}
	}
}

// TestChartsShopsMax: past ChartShopsMax shops, the least recently active
// is forgotten, and its page says so.
func TestChartsShopsMax(t *testing.T) {
	c := newCharts(time.Second)
	t0 := time.Unix(1_800_000_000, 0)
	for i := range ChartShopsMax + 1 {
		c.observe(t0.Add(time.Duration(i)*time.Millisecond), int64(i+1), 201, time.Millisecond)
	}
	if len(c.shops) != ChartShopsMax {
		t.Fatalf("%d shops kept, want %d", len(c.shops), ChartShopsMax)
	}
	if v := c.view(t0.Add(2*time.Second), 1); !v.Forgotten || v.Charts[0].N != 0 {
		t.Errorf("the first shop: forgotten %v, %d points", v.Forgotten, v.Charts[0].N)
	}
	if v := c.view(t0.Add(2*time.Second), ChartShopsMax+1); v.Forgotten || v.Charts[0].N != 1 {
		t.Errorf("the last shop: forgotten %v, %d points", v.Forgotten, v.Charts[0].N)
	}
}

func ticks(ts []tick) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Label)
	}
	return strings.Join(s, " ")
}
