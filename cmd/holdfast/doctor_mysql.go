package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/mysql/mysqlops"
)

// runMySQLDoctor is doctor on a MySQL/MariaDB database (DATABASE_URL=mysql://…,
// or the private MariaDB of the serve running with dataDir): package
// mysqlops's checks and the engine's invariant check. It never migrates.
func runMySQLDoctor(ctx context.Context, out io.Writer, dataDir string, asJSON bool, idleWarn, xactWarn time.Duration) error {
	db, err := openServedMySQL(ctx, dataDir)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.requireSchema(ctx); err != nil {
		return err
	}
	mc, err := db.client(4, holdfast.Config{})
	if err != nil {
		return err
	}
	defer mc.DB().Close()
	rep, err := mysqlops.Doctor(ctx, mc.DB(), mysqlops.DoctorConfig{
		Engine:                    mc,
		IdleInTransactionWarn:     idleWarn,
		IdleInTransactionCritical: 12 * idleWarn,
		TransactionWarn:           xactWarn,
		TransactionCritical:       10 * xactWarn,
	})
	if err != nil {
		return err
	}
	if asJSON {
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
