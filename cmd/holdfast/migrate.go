package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	mysqlmigrations "github.com/holdfast/holdfast/mysql/migrations"
	pgmigrations "github.com/holdfast/holdfast/postgres/migrations"
)

func init() { register(newMigrateCmd) }

func newMigrateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "apply the schema's pending migrations (idempotent)",
		Long: `Apply the schema's pending migrations (idempotent, safe concurrently) to the
database behind DATABASE_URL (postgres:// or mysql://), or the embedded
cluster in --data-dir (created when missing). On MariaDB with DATABASE_URL
unset it migrates the private MariaDB of the serve running with --data-dir.

Only migrate, serve and the setup commands keys create and webhooks add
create or change the schema; every other command only reads it and, on a
database without the current schema, says to run holdfast migrate.

--group-events, after migrating, switches on grouped hold events: the holds
one combined batch creates become one event row instead of one per hold
(the feed and webhooks still give one event per hold). A database this
release creates has them from the start; one it upgrades keeps a row per
hold until this flag is given, because a process of an older release would
misread a grouped row: give it once every process serving the database
runs this release or later. It cannot be switched off.`,
		Args: noArgs,
	}
	dataDir := dataDirFlag(cmd.Flags())
	check := cmd.Flags().Bool("check", false, "only report whether the schema is current (exit 1 when behind)")
	group := cmd.Flags().Bool("group-events", false, "after migrating, switch on grouped hold events (once every process runs this release)")
	engine := engineFlag(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		eng, err := resolveEngine(*engine)
		if err != nil {
			return err
		}
		if *check && *group {
			return fmt.Errorf("--check and --group-events: --check changes nothing")
		}
		if eng == engineMySQL {
			return runMySQLMigrate(cmd.Context(), cmd.OutOrStdout(), *dataDir, *check, *group)
		}
		return runMigrate(cmd.Context(), cmd.OutOrStdout(), *dataDir, *check, *group)
	}
	return cmd
}

// runMySQLMigrate is migrate on MySQL/MariaDB: DATABASE_URL=mysql://…, or
// the private MariaDB of the serve running with dataDir.
func runMySQLMigrate(ctx context.Context, out io.Writer, dataDir string, check, group bool) error {
	d, err := openServedMySQL(ctx, dataDir)
	if err != nil {
		return err
	}
	defer d.Close()
	all, err := mysqlmigrations.All()
	if err != nil {
		return err
	}
	latest := all[len(all)-1].Version
	db, err := d.open(2)
	if err != nil {
		return err
	}
	defer db.Close()
	if check {
		// requireSchema's one line, without the package's prefix.
		if err := d.requireSchema(ctx); err != nil {
			return err
		}
		fmt.Fprintln(out, "schema is current at version", latest)
		return nil
	}
	applied, err := mysqlmigrations.Up(ctx, db)
	if err != nil {
		return fmt.Errorf("migrate MySQL schema: %w", err)
	}
	if len(applied) == 0 {
		fmt.Fprintln(out, "schema already current at version", latest)
	} else {
		fmt.Fprintf(out, "applied migrations %v; schema at version %d\n", applied, latest)
	}
	if group {
		if err := mysqlmigrations.EnableGroupedEvents(ctx, db); err != nil {
			return err
		}
	}
	return reportGrouped(out, func() (bool, error) { return mysqlmigrations.GroupedEvents(ctx, db) })
}

// reportGrouped says whether grouped hold events are on, and how to switch
// them on when not.
func reportGrouped(out io.Writer, on func() (bool, error)) error {
	ok, err := on()
	if err != nil {
		return err
	}
	if ok {
		fmt.Fprintln(out, "grouped hold events: on")
	} else {
		fmt.Fprintln(out, "grouped hold events: off (one event row per hold); once every process runs this release: holdfast migrate --group-events")
	}
	return nil
}

func runMigrate(ctx context.Context, out io.Writer, dataDir string, check, group bool) error {
	mode := persistent
	if check {
		mode = existing
	}
	db, err := openDatabase(ctx, mode, dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 2, "holdfast-migrate")
	if err != nil {
		return err
	}
	defer pool.Close()
	if check {
		// requireSchema's one line, without the package's prefix.
		if err := requireSchema(ctx, pool); err != nil {
			return err
		}
		fmt.Fprintln(out, "schema is current at version", pgmigrations.Latest())
		return nil
	}
	applied, err := pgmigrations.Up(ctx, pool)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(out, "schema already current at version", pgmigrations.Latest())
	} else {
		fmt.Fprintf(out, "applied migrations %v; schema at version %d\n", applied, pgmigrations.Latest())
	}
	if group {
		if err := pgmigrations.EnableGroupedEvents(ctx, pool); err != nil {
			return err
		}
	}
	return reportGrouped(out, func() (bool, error) { return pgmigrations.GroupedEvents(ctx, pool) })
}
