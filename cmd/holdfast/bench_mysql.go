package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/holdfast/holdfast/bench"
	"github.com/holdfast/holdfast/bench/hotbench"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqlbench"
)

// runBenchEngines handles bench's --engine: a list of engines
// (postgres,mariadb runs both from one invocation, PostgreSQL first). It
// reports done false when the PostgreSQL bench alone should run as before.
func runBenchEngines(ctx context.Context, stdout io.Writer, f *benchFlags) (done bool, err error) {
	names := splitList(*f.engine)
	if len(names) == 0 {
		names = []string{""}
	}
	var engines []string
	for _, n := range names {
		e, err := resolveEngine(n)
		if err != nil {
			return true, err
		}
		if !slices.Contains(engines, e) {
			engines = append(engines, e)
		}
	}
	if !slices.Contains(engines, engineMySQL) {
		return false, nil
	}
	if f.soak || f.replot != "" {
		return true, usageError("--soak and --replot run on --engine %s only", enginePostgres)
	}
	if slices.Contains(engines, enginePostgres) {
		pg := *f
		only := enginePostgres
		pg.engine = &only
		if err := runBench(ctx, stdout, &pg); err != nil {
			return true, err
		}
		fmt.Fprintln(stdout)
	}
	return true, runMySQLBench(ctx, f, mysqlJSONPath(f.jsonFile, slices.Contains(engines, enginePostgres)))
}

// mysqlJSONPath is where --json's MariaDB report goes: the file itself
// when MariaDB runs alone, else beside PostgreSQL's, "-mariadb" before its
// extension (bench.json: bench-mariadb.json).
func mysqlJSONPath(path string, both bool) string {
	if path == "" || !both {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-mariadb" + ext
}

// runMySQLBench is bench on the MySQL engine (package mysqlbench): the
// scenarios and strategies it has, on DATABASE_URL's server (mysql://…) or
// a private throwaway MariaDB.
func runMySQLBench(ctx context.Context, f *benchFlags, jsonPath string) error {
	if err := checkWritable("--json", jsonPath); err != nil {
		return err
	}
	clients, err := parseInts(f.clients)
	if err != nil {
		return usageError("--clients: %v", err)
	}
	if f.duration <= 0 || f.txWork < 0 {
		return usageError("durations must be positive")
	}
	keep := func(what string, asked, have []string) []string {
		var in, out []string
		for _, a := range asked {
			if slices.Contains(have, a) {
				in = append(in, a)
			} else {
				out = append(out, a)
			}
		}
		if len(out) > 0 {
			stderrf("MariaDB bench: skipping %s %s (the MySQL bench has %s)", what, strings.Join(out, ","), strings.Join(have, ","))
		}
		return in
	}
	scenarios := keep("scenarios", splitList(f.scenarios), hotbench.Scenarios())
	var have []string
	for _, s := range mysql.Strategies() {
		have = append(have, string(s))
	}
	strategies := keep("strategies", splitList(f.strategies), have)
	if len(scenarios) == 0 || len(strategies) == 0 {
		return usageError("no scenario or strategy the MySQL bench runs (scenarios %s; strategies %s)",
			strings.Join(hotbench.Scenarios(), ", "), strings.Join(have, ", "))
	}
	db, err := openMySQLDatabase(ctx, true, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	server, err := mysql.ParseURL(db.URL)
	if err != nil {
		return errors.New("DATABASE_URL is not a valid mysql:// URL")
	}
	target := mysqlbench.New(server)
	defer target.Close()
	start := time.Now()
	rep, err := hotbench.Run(ctx, target, hotbench.Options{
		Scenarios:  scenarios,
		Strategies: strategies,
		Clients:    clients,
		Duration:   f.duration,
		TxWork:     f.txWork,
		Progress:   os.Stderr,
	})
	if rep != nil && len(rep.Results) > 0 {
		fmt.Printf("holdfast bench %s  (MariaDB part took %s)\n\n", f.line, time.Since(start).Round(time.Second))
		if werr := rep.WriteTable(os.Stdout); werr != nil {
			return werr
		}
		if jsonPath != "" {
			if werr := bench.WriteFile(jsonPath, rep.WriteJSON); werr != nil {
				return werr
			}
		}
	}
	if errors.Is(err, hotbench.ErrIncorrect) {
		return &exitError{code: 1, msg: "OVERSELL OR AUDIT FAILURE: " + err.Error()}
	}
	return err
}
