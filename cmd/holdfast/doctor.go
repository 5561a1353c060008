package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/ops"
)

func init() {
	register(&command{name: "doctor", summary: "check the database's settings, vacuum, sessions and invariant (exit 2 on critical findings)", run: runDoctor})
}

func runDoctor(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	dataDir := fs.String("data-dir", defaultDataDir, "embedded cluster directory, when DATABASE_URL is unset")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	idleWarn := fs.Duration("idle-in-transaction", 5*time.Second, "report sessions idle in a transaction for longer (critical at 12×)")
	xactWarn := fs.Duration("transaction", time.Minute, "report transactions and snapshots open for longer (critical at 10×)")
	strategy := fs.String("strategy", "", "the service's default strategy (counter, pool or slots), for pool fill; empty: holdfast's default")
	poolCap := fs.Int("pool-cap", 0, "the service's default pool cap, for pool fill; 0: holdfast's default")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: holdfast doctor [flags]\n\nChecks the database behind DATABASE_URL (or the embedded cluster in --data-dir) and\nreports each finding with what it means and what to do. Exit status 2 when any finding\nis critical, so it can run from cron or CI.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	db, err := openDatabase(ctx, persistent, *dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 4, "holdfast-doctor")
	if err != nil {
		return err
	}
	defer pool.Close()
	client, err := holdfast.New(pool, holdfast.Config{Strategy: holdfast.Strategy(*strategy), PoolCap: *poolCap})
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	rep, err := ops.Doctor(ctx, pool, ops.DoctorConfig{
		Client:                    client,
		IdleInTransactionWarn:     *idleWarn,
		IdleInTransactionCritical: 12 * *idleWarn,
		TransactionWarn:           *xactWarn,
		TransactionCritical:       10 * *xactWarn,
	})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Print(rep.Text())
	}
	if n := rep.Count(ops.SeverityCritical); n > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("%d critical findings", n)}
	}
	return nil
}
