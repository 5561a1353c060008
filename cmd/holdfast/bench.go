package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast/bench"
	"github.com/holdfast/holdfast/httpapi/httpbench"
	lredis "github.com/holdfast/holdfast/legacy/redis"
)

func init() { register(newBenchCmd) }

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "measure the allocation strategies side by side (holds/s, latency, dead tuples, oversell)",
		Long: `Runs every (scenario, clients, strategy) on a fresh database of DATABASE_URL's server (its role
needs CREATEDB) or of a throwaway durable embedded cluster, and fails (exit 1) on any oversell.`,
		Args: noArgs,
	}
	f := &benchFlags{}
	fs := cmd.Flags()
	fs.StringVar(&f.scenarios, "scenarios", strings.Join(bench.Scenarios(), ","), "scenarios to run, comma-separated (also: "+strings.Join(bench.AllocationScenarios(), ", ")+", allocation against a fixed location, engine strategies only; "+bench.ScenarioAvail+", availability reads of the hot key, with hot: reads/s ÷ holds/s)")
	fs.StringVar(&f.strategies, "strategies", strings.Join(bench.Strategies(), ","), "strategies to run, comma-separated (engine strategies and the baselines pessimistic, optimistic)")
	fs.StringVar(&f.clients, "clients", "1,8,32,64", "client counts, comma-separated")
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "measured time per run")
	fs.DurationVar(&f.txWork, "tx-work", 5*time.Millisecond, "simulated checkout work inside each hot-tx transaction")
	fs.StringVar(&f.jsonFile, "json", "", "write the results as JSON to `FILE`")
	fs.StringVar(&f.svgFile, "svg", "", "write a chart of holds/s by clients as SVG to `FILE`")
	fs.BoolVar(&f.soak, "soak", false, "instead: 10 minutes of hot at 64 clients on the best strategy, per-minute throughput and dead tuples; with --http: an hour of hot through holdfast serve, per-minute holds/s, latency, non-201 answers, serve's RSS, load average, held holds, oldest unswept expiry, holds table size")
	fs.DurationVar(&f.soakDuration, "soak-duration", 10*time.Minute, "length of --soak (with --http, unset means 1h)")
	fs.DurationVar(&f.soakTTL, "soak-ttl", httpbench.SoakTTLDefault, "with --http --soak: each hold's TTL (short, so that expiries run at the reservation rate from the second minute on)")
	f.engine = engineFlag(fs)
	fs.StringVar(&f.replot, "replot", "", "instead: read a --json `FILE` of an earlier run and print its table (and --svg) again, without running")
	fs.BoolVar(&f.http, "http", false, "instead: the HTTP service on hot at one --clients count (default 64, --duration default 10s): the library in-process, holdfast serve in its own process, and the HTTP ceiling")
	fs.BoolVar(&f.fairness, "fairness", false, "with --http: also a steady shop's p99 alone and during another shop's flash sale")
	fs.BoolVar(&f.redis, "redis", false, "add a Redis row: the legacy Redis design's reserve (docs/MIGRATION.md) on one hot key at the same clients, on REDIS_URL or a private redis-server")
	fs.IntVar(&f.redisAttempts, "redis-attempts", 20_000, "reservations per --redis run")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		// The command line after "holdfast bench", for the report's title.
		args := os.Args[1:]
		if i := slices.Index(args, "bench"); i >= 0 {
			args = args[i+1:]
		}
		f.line = strings.Join(args, " ")
		f.clientsSet, f.durationSet, f.soakDurationSet = fs.Changed("clients"), fs.Changed("duration"), fs.Changed("soak-duration")
		f.stderr = cmd.ErrOrStderr()
		return runBench(cmd.Context(), cmd.OutOrStdout(), f)
	}
	return cmd
}

// benchFlags are bench's settings; line is the command line, for the
// report's title.
type benchFlags struct {
	scenarios, strategies, clients, jsonFile, svgFile, replot, line string
	duration, txWork, soakDuration, soakTTL                         time.Duration
	soak, http, fairness, redis                                     bool
	redisAttempts                                                   int
	clientsSet, durationSet, soakDurationSet                        bool
	engine                                                          *string
	stderr                                                          io.Writer // notes before a long run
}

func runBench(ctx context.Context, stdout io.Writer, f *benchFlags) error {
	// The output files are written after the whole run: check first that
	// they can be, rather than lose a benchmark of minutes to a typo.
	for _, o := range []struct{ flag, path string }{{"--json", f.jsonFile}, {"--svg", f.svgFile}} {
		if err := checkWritable(o.flag, o.path); err != nil {
			return err
		}
	}
	if done, err := runBenchEngines(ctx, stdout, f); done {
		return err
	}
	if f.replot != "" {
		return replotReport(f.replot, f.svgFile)
	}
	cl, err := parseInts(f.clients)
	if err != nil {
		return usageError("--clients: %v", err)
	}
	if f.duration <= 0 || f.txWork < 0 || f.soakDuration <= 0 {
		return usageError("durations must be positive")
	}
	switch {
	case f.fairness && !f.http:
		return usageError("--fairness goes with --http")
	case f.http && f.soak && (f.fairness || f.redis):
		return usageError("--http --soak runs the service alone: no --fairness or --redis")
	case f.redis && f.soak:
		return usageError("--redis goes with the strategy table or --http, not --soak")
	case f.soakTTL < time.Second || f.soakTTL > time.Hour || f.soakTTL%time.Second != 0:
		return usageError("--soak-ttl must be whole seconds from 1s to 1h")
	case f.redis && (f.redisAttempts < 1 || f.redisAttempts > lredis.BenchAttemptsMax):
		return usageError("--redis-attempts must be between 1 and %d", lredis.BenchAttemptsMax)
	case slices.ContainsFunc(cl, func(n int) bool { return n > benchClientsMax }):
		return usageError("--clients: at most %d", benchClientsMax)
	}
	if f.http {
		return runHTTPBench(ctx, stdout, f, cl)
	}
	opts := bench.Options{
		Scenarios:  splitList(f.scenarios),
		Strategies: splitList(f.strategies),
		Clients:    cl,
		Duration:   f.duration,
		TxWork:     f.txWork,
		Progress:   os.Stderr,
	}
	if err := known("scenario", opts.Scenarios, append(append(bench.Scenarios(), bench.AllocationScenarios()...), bench.ScenarioAvail)); err != nil {
		return err
	}
	if err := known("strategy", opts.Strategies, bench.Strategies()); err != nil {
		return err
	}
	if !f.soak {
		// The full table is long (10 minutes with the defaults): say so
		// before it starts, and how to make it shorter.
		runs := len(opts.Scenarios) * len(opts.Strategies) * len(cl)
		fmt.Fprintf(f.stderr, "bench: %d runs of %v (%d scenarios × %d strategies × %d client counts): at least %v; narrow it with --scenarios, --strategies, --clients or --duration\n",
			runs, f.duration, len(opts.Scenarios), len(opts.Strategies), len(cl), time.Duration(runs)*f.duration)
	}
	db, err := openDatabase(ctx, throwaway, "", stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	opts.URL = db.URL
	start := time.Now()
	if f.soak {
		rep, err := bench.Soak(ctx, opts, bench.SoakOptions{Duration: f.soakDuration, Interval: f.soakDuration / 10})
		if rep != nil {
			if werr := rep.WriteTable(stdout); werr != nil {
				return werr
			}
			if f.jsonFile != "" {
				if werr := bench.WriteFile(f.jsonFile, rep.WriteJSON); werr != nil {
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
		fmt.Fprintf(stdout, "holdfast bench %s  (took %s)\n\n", f.line, time.Since(start).Round(time.Second))
		if werr := rep.WriteTable(stdout); werr != nil {
			return werr
		}
		if f.jsonFile != "" {
			if werr := bench.WriteFile(f.jsonFile, rep.WriteJSON); werr != nil {
				return werr
			}
		}
		if f.svgFile != "" {
			if werr := bench.WriteFile(f.svgFile, rep.WriteSVG); werr != nil {
				return werr
			}
		}
	}
	if err != nil {
		return benchError(err)
	}
	if f.redis {
		rows, err := redisRows(ctx, cl, f.redisAttempts)
		if err != nil {
			return err
		}
		return writeRedisTable(stdout, rows, rep)
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
			return usageError("unknown %s %q (known: %s)", what, n, strings.Join(valid, ", "))
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

// checkWritable refuses, before anything runs, an output path that cannot
// be written: its directory missing or not writable, or a directory itself.
// It leaves nothing behind.
func checkWritable(flag, path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usageError("%s %s is a directory; give a file name", flag, path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return usageError("%s %s: directory %s does not exist; nothing was run", flag, path, dir)
	}
	probe, err := os.CreateTemp(dir, ".holdfast-bench-*")
	if err != nil {
		return usageError("%s %s: cannot write in %s (%v); nothing was run", flag, path, dir, errors.Unwrap(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}
