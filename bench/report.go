package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/holdfast/holdfast/bench/hotbench"
)

// counterOf returns the counter strategy's result for the same scenario and
// clients as res, if the report has one.
func (rep *Report) counterOf(res *Result) *Result {
	for i := range rep.Runs {
		o := &rep.Runs[i]
		if o.Strategy == "counter" && o.Scenario == res.Scenario && o.Clients == res.Clients {
			return o
		}
	}
	return nil
}

// WriteTable writes the report as a readable table, then what the backends
// were waiting on.
func (rep *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tclients\tstrategy\tholds/s\tx counter\tx ceiling\tx limit\tp50 ms\tp95 ms\tp99 ms\tmax ms\terrors\tretries\tdead\tdb µs/h\tbe µs/h\tgo µs/h\twal B/h\tcheck\t")
	limit := 0.0
	for _, l := range rep.Limits {
		if l.Strategy == hotbench.LimitStrategy(1) {
			limit = l.HoldsPerSec
		}
	}
	prev := ""
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if prev != "" && r.Scenario != prev {
			fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t")
		}
		prev = r.Scenario
		xc := "-"
		if c := rep.counterOf(r); c != nil && c.HoldsPerSec > 0 {
			xc = fmt.Sprintf("%.2f", r.HoldsPerSec/c.HoldsPerSec)
		}
		xl := "-"
		if r.CommitCeiling > 0 {
			xl = fmt.Sprintf("%.2f", r.HoldsPerSec/r.CommitCeiling)
		}
		xm := "-"
		if limit > 0 {
			xm = fmt.Sprintf("%.2f", r.HoldsPerSec/limit)
		}
		check := "ok"
		if r.Failed() {
			check = "FAIL"
		}
		p95, pmax := fmt.Sprintf("%.2f", r.P95ms), fmt.Sprintf("%.1f", r.Maxms)
		if r.Scenario == ScenarioAvail {
			p95, pmax = "-", "-" // hotbench measures p50 and p99 only
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%s\t%s\t%s\t%.2f\t%s\t%.2f\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Scenario, r.Clients, r.Strategy, r.HoldsPerSec, xc, xl, xm, r.P50ms, p95, r.P99ms, pmax,
			codes(r.Errors, r.ErrorsByCode), codes(r.Retries, r.RetriesByCode), r.DeadTuples,
			costCell(r.ServerCPUus), costCell(r.BackendCPUus), costCell(r.GoCPUus), costCell(r.LogBytes), check)
	}
	for _, l := range rep.Limits {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t-\t%s\t-\t%.2f\t-\t%.2f\t-\t%d\t0\t-\t%s\t-\t%s\t%s\tok\t\n",
			l.Scenario, l.Clients, l.Strategy, l.HoldsPerSec, ceilingRatio(l.HoldsPerSec, rep.Ceilings[l.Clients]), l.P50ms, l.P99ms, l.Errors,
			costCell(l.ServerCPUus), costCell(l.GoCPUus), costCell(l.LogBytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for i := range rep.Runs {
		if r := &rep.Runs[i]; r.Scenario == ScenarioSoldout {
			fmt.Fprintf(w, "soldout %-10s %d units held, %d attempts answered in %.0f ms (%d sold out, %d errors)\n",
				r.Strategy, r.HeldUnits, r.Holds+r.SoldOut+r.Errors, r.ElapsedMs, r.SoldOut, r.Errors)
		}
	}
	rep.writeAvail(w)
	for i := range rep.Runs {
		if r := &rep.Runs[i]; r.Failed() {
			fmt.Fprintf(w, "FAIL %s %s c=%d: oversold %d: %s\n", r.Strategy, r.Scenario, r.Clients, r.Oversold, r.Problem)
		}
	}
	fmt.Fprint(w, "commit ceiling (one-row insert per transaction):")
	keys := make([]int, 0, len(rep.Ceilings))
	for c := range rep.Ceilings {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	for _, c := range keys {
		fmt.Fprintf(w, "  c=%d %.0f/s", c, rep.Ceilings[c])
	}
	fmt.Fprintln(w)
	if len(rep.Limits) > 0 {
		fmt.Fprintf(w, "durable limit: %d connections, each committing transactions of one counter-row decrement and %d narrow rows keyed (shop, ID), on 1 and %d counter rows (%d holds in flight; p50/p99 per transaction); x limit is over the one-row limit\n",
			hotbench.LimitConns, hotbench.LimitBatch, hotbench.LimitStripes, hotbench.LimitConns*hotbench.LimitBatch)
	}
	fmt.Fprintln(w, "per hold: db µs/h the server's CPU (all its processes, when local), be µs/h the run database's backends' CPU, go µs/h this process's CPU (engine, pgx and the load generator), wal B/h WAL bytes")
	if rep.LoadBefore != "" {
		fmt.Fprintf(w, "load average: %s before, %s after (this machine has %d CPUs)\n", rep.LoadBefore, rep.LoadAfter, runtime.NumCPU())
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tclients\tstrategy\tcpu go%\tcpu pg%\tcpu other%\tbusy backends by wait event (avg)\tdead created\tinline refills")
	for i := range rep.Runs {
		r := &rep.Runs[i]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%.0f\t%s\t%d\t%d\n", r.Scenario, r.Clients, r.Strategy, r.GoCPU, r.PgCPU, r.OtherCPU, topWaits(r.Waits, 4), r.DeadCreated, r.InlineRefills)
	}
	return tw.Flush()
}

// costCell formats a per-hold cost; zero is unknown.
func costCell(v float64) string {
	switch {
	case v <= 0:
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

func ceilingRatio(v, ceiling float64) string {
	if ceiling <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v/ceiling)
}

// codes formats a total with its breakdown: "12 (40P01:10 55P03:2)".
func codes(total int64, by map[string]int64) string {
	if total == 0 {
		return "0"
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, by[k])
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, " "))
}

func topWaits(w map[string]float64, n int) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range w {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].k < all[j].k
	})
	var parts []string
	for i, e := range all {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", e.k, e.v))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// WriteJSON writes the report as JSON: {"runs": [...], ...}.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// ReadJSON reads a report written by WriteJSON, to print or plot it again.
func ReadJSON(r io.Reader) (*Report, error) {
	var rep Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return nil, fmt.Errorf("bench: read report: %w", err)
	}
	return &rep, nil
}

// WriteFile writes the report to path with write (WriteJSON, WriteSVG).
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeAvail prints, for every avail run with a hot run at the same
// clients and strategy, availability reads/s against reservations/s
// (issue #30 item 4's target: at least 10×).
func (rep *Report) writeAvail(w io.Writer) {
	for i := range rep.Runs {
		a := &rep.Runs[i]
		if a.Scenario != ScenarioAvail {
			continue
		}
		for j := range rep.Runs {
			h := &rep.Runs[j]
			if h.Scenario == ScenarioHot && h.Strategy == a.Strategy && h.Clients == a.Clients && h.HoldsPerSec > 0 {
				fmt.Fprintf(w, "availability vs reserve, %s at %d clients: %.0f reads/s ÷ %.0f holds/s = %.1f×\n",
					a.Strategy, a.Clients, a.HoldsPerSec, h.HoldsPerSec, a.HoldsPerSec/h.HoldsPerSec)
			}
		}
	}
}
