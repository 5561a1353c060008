package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/holdfast/holdfast/migrate"
)

func init() {
	register(&command{name: "migrate", summary: "apply the schema's pending migrations (idempotent)", run: runMigrate})
}

func runMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	dataDir := fs.String("data-dir", defaultDataDir, "embedded cluster directory, when DATABASE_URL is unset")
	check := fs.Bool("check", false, "only report whether the schema is current (exit 1 when behind)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := openDatabase(ctx, persistent, *dataDir, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, 2, "holdfast-migrate")
	if err != nil {
		return err
	}
	defer pool.Close()
	if *check {
		if err := migrate.Check(ctx, pool); err != nil {
			return err
		}
		fmt.Println("schema is current at version", migrate.Latest())
		return nil
	}
	applied, err := migrate.Up(ctx, pool)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Println("schema already current at version", migrate.Latest())
		return nil
	}
	fmt.Printf("applied migrations %v; schema at version %d\n", applied, migrate.Latest())
	return nil
}

// defaultDataDir is where serve and migrate keep the embedded cluster.
const defaultDataDir = ".holdfast"
