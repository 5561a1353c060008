package main

import (
	"context"
	"io"
	"slices"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// runMySQLDemo is the flash sale on the MySQL engine: DATABASE_URL
// (mysql://…) or a private throwaway MariaDB server.
func runMySQLDemo(ctx context.Context, w io.Writer, f *demoFlags) error {
	if f.strategy != "" && !slices.Contains(mysql.Strategies(), holdfast.Strategy(f.strategy)) {
		return usageError("--strategy %s is not offered on MariaDB (%s)", f.strategy, namesOf(mysql.Strategies()))
	}
	db, err := openMySQLDatabase(ctx, true, stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	mc, err := db.client(f.concurrency+8, holdfast.Config{})
	if err != nil {
		return err
	}
	defer mc.DB().Close()
	via := "the Go library on MariaDB"
	if db.Cluster == nil {
		via = "the Go library on MySQL/MariaDB (DATABASE_URL)"
	}
	return runSale(ctx, w, mc, mc, demoShop(), via, f)
}
