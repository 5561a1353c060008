package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/holdfast/holdfast/bench"
)

func init() {
	register(&command{name: "bench", summary: "measure the allocation strategies side by side (holds/s, latency, dead tuples, oversell)", run: runBench})
}

func runBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	scenarios := fs.String("scenarios", strings.Join(bench.Scenarios(), ","), "scenarios to run, comma-separated")
	strategies := fs.String("strategies", strings.Join(bench.Strategies(), ","), "strategies to run, comma-separated (engine strategies and the baselines seed004, optimistic)")
	clients := fs.String("clients", "1,8,32,64", "client counts, comma-separated")
	duration := fs.Duration("duration", 5*time.Second, "measured time per run")
	txWork := fs.Duration("tx-work", 5*time.Millisecond, "simulated checkout work inside each hot-tx transaction")
	jsonFile := fs.String("json", "", "write the results as JSON to `FILE`")
	svgFile := fs.String("svg", "", "write a chart of holds/s by clients as SVG to `FILE`")
	soak := fs.Bool("soak", false, "instead: 10 minutes of hot at 64 clients on the best strategy, per-minute throughput and dead tuples")
	soakDuration := fs.Duration("soak-duration", 10*time.Minute, "length of --soak")
	replot := fs.String("replot", "", "instead: read a --json `FILE` of an earlier run and print its table (and --svg) again, without running")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: holdfast bench [flags]\n\nRuns every (scenario, clients, strategy) on a fresh database of DATABASE_URL's server (its role\nneeds CREATEDB) or of a throwaway durable embedded cluster, and fails (exit 1) on any oversell.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	if *replot != "" {
		return replotReport(*replot, *svgFile)
	}
	cl, err := parseInts(*clients)
	if err != nil {
		return fmt.Errorf("%w: --clients: %v", errUsage, err)
	}
	if *duration <= 0 || *txWork < 0 || *soakDuration <= 0 {
		return fmt.Errorf("%w: durations must be positive", errUsage)
	}
	opts := bench.Options{
		Scenarios:  splitList(*scenarios),
		Strategies: splitList(*strategies),
		Clients:    cl,
		Duration:   *duration,
		TxWork:     *txWork,
		Progress:   os.Stderr,
	}
	if err := known("scenario", opts.Scenarios, bench.Scenarios()); err != nil {
		return err
	}
	if err := known("strategy", opts.Strategies, bench.Strategies()); err != nil {
		return err
	}
	db, err := openDatabase(ctx, throwaway, "", stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	opts.URL = db.URL
	start := time.Now()
	if *soak {
		rep, err := bench.Soak(ctx, opts, bench.SoakOptions{Duration: *soakDuration, Interval: *soakDuration / 10})
		if rep != nil {
			if werr := rep.WriteTable(os.Stdout); werr != nil {
				return werr
			}
			if *jsonFile != "" {
				if werr := bench.WriteFile(*jsonFile, rep.WriteJSON); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			return benchError(err)
		}
		if !rep.Met {
			return &exitError{code: 1, msg: "soak target not met"}
		}
		return nil
	}
	rep, err := bench.Run(ctx, opts)
	if rep != nil && len(rep.Runs) > 0 {
		fmt.Printf("holdfast bench %s  (took %s)\n\n", strings.Join(args, " "), time.Since(start).Round(time.Second))
		if werr := rep.WriteTable(os.Stdout); werr != nil {
			return werr
		}
		if *jsonFile != "" {
			if werr := bench.WriteFile(*jsonFile, rep.WriteJSON); werr != nil {
				return werr
			}
		}
		if *svgFile != "" {
			if werr := bench.WriteFile(*svgFile, rep.WriteSVG); werr != nil {
				return werr
			}
		}
	}
	if err != nil {
		return benchError(err)
	}
	return nil
}

// replotReport prints the table of a saved report and redraws its chart.
func replotReport(path, svgFile string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := bench.ReadJSON(f)
	if err != nil {
		return err
	}
	if err := rep.WriteTable(os.Stdout); err != nil {
		return err
	}
	if svgFile != "" {
		return bench.WriteFile(svgFile, rep.WriteSVG)
	}
	return nil
}

// benchError gives an incorrect strategy its loud exit.
func benchError(err error) error {
	if errors.Is(err, bench.ErrIncorrect) {
		return &exitError{code: 1, msg: "OVERSELL OR AUDIT FAILURE: " + err.Error()}
	}
	return err
}

// known rejects names not in valid before any database is started.
func known(what string, names, valid []string) error {
	for _, n := range names {
		if !slices.Contains(valid, n) {
			return fmt.Errorf("%w: unknown %s %q (known: %s)", errUsage, what, n, strings.Join(valid, ", "))
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", p)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}
