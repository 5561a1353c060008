package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast/bench"
	"github.com/holdfast/holdfast/httpapi/httpbench"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/rediscluster"
)

// benchClientsMax bounds --clients (lredis.BenchReserve's own bound).
const benchClientsMax = 4096

// httpBenchClientsDefault is --http's client count unless --clients says.
const httpBenchClientsDefault = 64

// benchBinary is the holdfast binary `bench --http` serves with: this one.
// Tests, whose executable is the test binary, replace it.
var benchBinary = os.Executable

// runHTTPBench is `bench --http`: httpbench's library, serve and ceiling
// sides on one database, then (--redis) the Redis design at the same
// clients.
func runHTTPBench(ctx context.Context, stdout io.Writer, f *benchFlags, cl []int) error {
	clients := httpBenchClientsDefault
	if f.clientsSet {
		if len(cl) != 1 {
			return usageError("--http runs at one --clients count, not %d", len(cl))
		}
		clients = cl[0]
	}
	var d = f.duration
	if !f.durationSet {
		d = 0 // httpbench's default
	}
	bin, err := benchBinary()
	if err != nil {
		return fmt.Errorf("bench --http: this binary serves the service side: %w", err)
	}
	db, err := openDatabase(ctx, throwaway, "", stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	if f.soak {
		return runHTTPSoak(ctx, stdout, f, httpbench.Options{DatabaseURL: db.URL, Binary: bin, Clients: clients, Log: os.Stderr})
	}
	rep, err := httpbench.Run(ctx, httpbench.Options{
		DatabaseURL: db.URL, Binary: bin, Clients: clients, Duration: d, Fairness: f.fairness, Log: os.Stderr,
	})
	if err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, rep.String()); err != nil {
		return err
	}
	if !f.redis {
		return nil
	}
	rows, err := redisRows(ctx, []int{clients}, f.redisAttempts)
	if err != nil {
		return err
	}
	r := rows[0]
	fmt.Fprintf(stdout, "%-10s %10.0f %10s %10s  %s\n", "redis", r.HoldsPerSec, "-", "-",
		fmt.Sprintf("map[held:%d short:%d errors:%d] (legacy design, %d reservations, no durable commit)", r.Held, r.Short, r.Errors, r.Attempts))
	if rep.Service.PerSec > 0 && r.HoldsPerSec > 0 {
		fmt.Fprintf(stdout, "service/redis %.2f×, library/redis %.2f×\n", rep.Service.PerSec/r.HoldsPerSec, rep.Library.PerSec/r.HoldsPerSec)
	}
	return redisCorrect(rows)
}

// runHTTPSoak is `bench --http --soak`: httpbench.Soak for --soak-duration
// (unset: an hour), its rows on stdout as they are taken, then the
// verdict; exit 1 when the target is missed.
func runHTTPSoak(ctx context.Context, stdout io.Writer, f *benchFlags, o httpbench.Options) error {
	var d time.Duration // httpbench's default
	if f.soakDurationSet {
		d = f.soakDuration
	}
	rep, err := httpbench.Soak(ctx, o, httpbench.SoakOptions{Duration: d, TTL: f.soakTTL, Rows: stdout})
	if rep != nil {
		if werr := rep.WriteVerdict(stdout); werr != nil {
			return werr
		}
		if f.jsonFile != "" {
			if werr := bench.WriteFile(f.jsonFile, rep.WriteJSON); werr != nil {
				return werr
			}
		}
	}
	if err != nil {
		return err
	}
	if !rep.Met {
		return &exitError{code: 1, msg: "service soak target not met"}
	}
	return nil
}

// redisRows runs lredis.BenchReserve (the legacy Redis design's full hold
// on one hot key) at each client count, on REDIS_URL or a private
// redis-server it starts and stops.
func redisRows(ctx context.Context, clients []int, attempts int) ([]*lredis.BenchResult, error) {
	u, srv, err := rediscluster.URLOrStart(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench --redis: no Redis: set REDIS_URL or install redis-server: %w", err)
	}
	if srv != nil {
		defer srv.Stop() //nolint:errcheck
	}
	opt, err := goredis.ParseURL(u)
	if err != nil {
		return nil, usageError("REDIS_URL must be a Redis URL such as redis://127.0.0.1:6379/0")
	}
	opt.PoolSize = max(opt.PoolSize, slices.Max(clients))
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	var rows []*lredis.BenchResult
	for _, c := range clients {
		fmt.Fprintf(os.Stderr, "redis: hot, %d clients, %d reservations\n", c, attempts)
		r, err := lredis.BenchReserve(ctx, rdb, c, attempts)
		if err != nil {
			return nil, fmt.Errorf("bench --redis at %d clients: %w", c, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// redisCorrect fails like the strategies do on an oversell or errors.
func redisCorrect(rows []*lredis.BenchResult) error {
	for _, r := range rows {
		if r.Oversold > 0 {
			return &exitError{code: 1, msg: fmt.Sprintf("OVERSELL: the Redis design held %d beyond the stock at %d clients", r.Oversold, r.Clients)}
		}
		if r.Errors > 0 {
			return &exitError{code: 1, msg: fmt.Sprintf("the Redis run at %d clients had %d errors", r.Clients, r.Errors)}
		}
	}
	return nil
}

// writeRedisTable prints the Redis rows beside the best holdfast strategy
// on hot at the same clients, from the same run.
func writeRedisTable(w io.Writer, rows []*lredis.BenchResult, rep *bench.Report) error {
	fmt.Fprintf(w, "\nhot: the legacy Redis design (one Lua script per hold, in memory, no durable commit) beside holdfast's best strategy, same run\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tredis holds/s\tholdfast holds/s\tstrategy\tholdfast/redis\t")
	for _, r := range rows {
		var best bench.Result
		if rep != nil {
			for _, x := range rep.Runs {
				if x.Scenario == bench.ScenarioHot && x.Clients == r.Clients && x.HoldsPerSec > best.HoldsPerSec {
					best = x
				}
			}
		}
		hf, strategy, ratio := "-", "-", "-"
		if best.HoldsPerSec > 0 {
			hf, strategy = fmt.Sprintf("%.0f", best.HoldsPerSec), best.Strategy
			if r.HoldsPerSec > 0 {
				ratio = fmt.Sprintf("%.3f×", best.HoldsPerSec/r.HoldsPerSec)
			}
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%s\t%s\t\n", r.Clients, r.HoldsPerSec, hf, strategy, ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return redisCorrect(rows)
}
