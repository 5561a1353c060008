package httpapi_test

import (
	"context"
	"sync"
	"testing"
)

// The engines the HTTP tests run on.
const (
	enginePostgres = "postgres"
	engineMariaDB  = "mariadb"
)

// engines runs test once per engine, as parallel subtests named for the
// engine: the same HTTP contract, checked on PostgreSQL and on MariaDB
// (the package's one private MariaDB server, mysqltest). test makes its
// server with newEnvOn(t, engine, …).
func engines(t *testing.T, test func(t *testing.T, engine string)) {
	t.Helper()
	for _, name := range []string{enginePostgres, engineMariaDB} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, name)
		})
	}
}

// sqlOn runs a statement on the env's database: pg on PostgreSQL, my on
// MariaDB (the two dialects differ; the intent must not).
func (e *env) sqlOn(pg, my string, args ...any) {
	e.t.Helper()
	ctx := context.Background()
	var err error
	if e.my != nil {
		_, err = e.my.DB.ExecContext(ctx, my, args...)
	} else {
		_, err = e.db.Pool.Exec(ctx, pg, args...)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// countsOn scans one row of counts: pg on PostgreSQL, my on MariaDB.
func (e *env) countsOn(pg, my string, dst ...any) {
	e.t.Helper()
	ctx := context.Background()
	var err error
	if e.my != nil {
		err = e.my.DB.QueryRowContext(ctx, my).Scan(dst...)
	} else {
		err = e.db.Pool.QueryRow(ctx, pg).Scan(dst...)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// lockLevels makes every stock change wait, on either engine, until the
// returned func (also run at cleanup) releases the lock: PostgreSQL locks
// inventory_levels, MariaDB every row of it.
func (e *env) lockLevels() (release func()) {
	e.t.Helper()
	ctx := context.Background()
	var rollback func() error
	if e.my != nil {
		tx, err := e.my.DB.BeginTx(ctx, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		rollback = tx.Rollback
		rows, err := tx.QueryContext(ctx, "SELECT shop_id FROM inventory_levels FOR UPDATE")
		if err == nil {
			err = rows.Close()
		}
		if err != nil {
			_ = tx.Rollback()
			e.t.Fatal(err)
		}
	} else {
		tx, err := e.db.Pool.Begin(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		rollback = func() error { return tx.Rollback(ctx) }
		if _, err := tx.Exec(ctx, "LOCK TABLE inventory_levels IN EXCLUSIVE MODE"); err != nil {
			_ = rollback()
			e.t.Fatal(err)
		}
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = rollback() }) }
	e.t.Cleanup(release)
	return release
}
