package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
)

func init() { register(newDoctorCmd) }

func newDoctorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "check the database's settings, vacuum, sessions and invariant (exit 2 on critical findings)",
		Long: `Checks the database behind DATABASE_URL (or the embedded cluster in --data-dir; with
--engine mariadb the private MariaDB of the serve --engine mariadb running there) and
reports each finding with what it means and what to do. Exit status 2 when any finding
is critical, so it can run from cron or CI. It only reads: on a database without
holdfast's schema it says to run holdfast migrate.`,
		Args: noArgs,
	}
	fs := cmd.Flags()
	dataDir := dataDirFlag(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	idleWarn := fs.Duration("idle-in-transaction", 5*time.Second, "report sessions idle in a transaction for longer (critical at 12×)")
	xactWarn := fs.Duration("transaction", time.Minute, "report transactions and snapshots open for longer (critical at 10×)")
	strategy := fs.String("strategy", "", "the service's default strategy ("+strategyNames()+"), for pool fill; empty: holdfast's default")
	poolCap := fs.Int("pool-cap", 0, "the service's default pool cap, for pool fill; 0: holdfast's default")
	engine := engineFlag(fs)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		if eng, err := resolveEngine(*engine); err != nil {
			return err
		} else if eng == engineMySQL {
			return runMySQLDoctor(ctx, cmd.OutOrStdout(), *dataDir, *asJSON, *idleWarn, *xactWarn)
		}
		st, err := parseStrategy(*strategy)
		if err != nil {
			return err
		}
		db, err := openDatabase(ctx, existing, *dataDir, stderrf)
		if err != nil {
			return err
		}
		defer db.Close()
		pool, err := db.pool(ctx, 4, "holdfast-doctor")
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := requireSchema(ctx, pool); err != nil {
			return err
		}
		client, err := postgres.New(pool, holdfast.Config{Strategy: st, PoolCap: *poolCap})
		if err != nil {
			return configError(err)
		}
		rep, err := pgops.Doctor(ctx, pool, pgops.DoctorConfig{
			Engine:                    client,
			IdleInTransactionWarn:     *idleWarn,
			IdleInTransactionCritical: 12 * *idleWarn,
			TransactionWarn:           *xactWarn,
			TransactionCritical:       10 * *xactWarn,
			Embedded:                  db.Cluster != nil,
		})
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else {
			fmt.Fprint(out, rep.Text())
		}
		if n := rep.Count(health.SeverityCritical); n > 0 {
			return &exitError{code: 2, msg: fmt.Sprintf("%d critical findings", n)}
		}
		return nil
	}
	return cmd
}
