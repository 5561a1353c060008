package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast/postgres/migrate"
)

func init() { register(newMigrateCmd) }

func newMigrateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "apply the schema's pending migrations (idempotent)",
		Args:  noArgs,
	}
	dataDir := dataDirFlag(cmd.Flags())
	check := cmd.Flags().Bool("check", false, "only report whether the schema is current (exit 1 when behind)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runMigrate(cmd.Context(), cmd.OutOrStdout(), *dataDir, *check)
	}
	return cmd
}

func runMigrate(ctx context.Context, out io.Writer, dataDir string, check bool) error {
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
		if err := migrate.Check(ctx, pool); err != nil {
			return err
		}
		fmt.Fprintln(out, "schema is current at version", migrate.Latest())
		return nil
	}
	applied, err := migrate.Up(ctx, pool)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(out, "schema already current at version", migrate.Latest())
		return nil
	}
	fmt.Fprintf(out, "applied migrations %v; schema at version %d\n", applied, migrate.Latest())
	return nil
}
