package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/spf13/pflag"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqlcluster"
)

// The driver's own log lines ("[mysql] … packets.go:58 unexpected EOF" when
// an interrupt closes a connection mid-query) are not the CLI's answers:
// the errors they accompany are reported once, in the command's words.
func init() { _ = mysqldriver.SetLogger(log.New(io.Discard, "", 0)) }

// The engines a command can run on (--engine, HOLDFAST_ENGINE): one name
// per database, the name of its package (postgres, mysql). The MySQL
// engine runs on MySQL and MariaDB servers; "mariadb" (and "postgresql")
// stay accepted as aliases.
const (
	enginePostgres = "postgres"
	engineMySQL    = "mysql"
)

// engineFlag adds --engine to a command's flags.
func engineFlag(fs *pflag.FlagSet) *string {
	return fs.String("engine", "", "database engine: "+enginePostgres+" or "+engineMySQL+" (MySQL or MariaDB; alias mariadb); empty: from DATABASE_URL (mysql:// selects "+engineMySQL+"), else "+enginePostgres)
}

// isMySQLURL reports whether u names a MySQL or MariaDB server.
func isMySQLURL(u string) bool {
	return strings.HasPrefix(u, "mysql://") || strings.HasPrefix(u, "mariadb://")
}

// resolveEngine turns --engine and DATABASE_URL into the engine to run on.
// A mysql:// DATABASE_URL selects the MySQL engine; --engine that contradicts
// DATABASE_URL is a usage error rather than a surprise.
func resolveEngine(flag string) (string, error) {
	u := os.Getenv("DATABASE_URL")
	switch flag {
	case "":
		if isMySQLURL(u) {
			return engineMySQL, nil
		}
		return enginePostgres, nil
	case engineMySQL, "mariadb":
		if u != "" && !isMySQLURL(u) {
			return "", usageError("--engine %s needs DATABASE_URL unset (a private MariaDB) or a mysql:// URL", flag)
		}
		return engineMySQL, nil
	case enginePostgres, "postgresql":
		if isMySQLURL(u) {
			return "", usageError("--engine %s with a mysql:// DATABASE_URL", flag)
		}
		return enginePostgres, nil
	}
	return "", usageError("unknown --engine %q (known: %s or %s)", flag, enginePostgres, engineMySQL)
}

// mysqlDatabaseName is the database holdfast creates on a private MariaDB.
const mysqlDatabaseName = "holdfast"

// mysqlDatabase is a MySQL/MariaDB database a command runs on: DATABASE_URL
// (mysql://…) when set, else a private throwaway MariaDB server from the
// local binaries (as an unprivileged user when run by root, its data in a
// temporary directory removed on Close).
type mysqlDatabase struct {
	URL     string
	Cluster *mysqlcluster.Cluster // nil when DATABASE_URL is set
}

// openMySQLDatabase resolves the MySQL database: DATABASE_URL when it is a
// mysql:// URL, else (only when throwaway is allowed) a private MariaDB.
// The schema is migrated. logf reports progress; errors are one line and
// never carry the password.
func openMySQLDatabase(ctx context.Context, allowThrowaway bool, logf func(string, ...any)) (*mysqlDatabase, error) {
	return openMySQLDatabaseAs(ctx, allowThrowaway, true, logf)
}

// openMySQLDatabaseAs is openMySQLDatabase that migrates only when
// doMigrate (serve --migrate=false: the caller checks the schema). The
// URL is checked either way.
func openMySQLDatabaseAs(ctx context.Context, allowThrowaway, doMigrate bool, logf func(string, ...any)) (*mysqlDatabase, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		d := &mysqlDatabase{URL: u}
		if !doMigrate {
			_, err := d.config()
			return d, err
		}
		return d, d.migrate(ctx)
	}
	if !allowThrowaway {
		return nil, errors.New("on MariaDB this command needs DATABASE_URL=mysql://user:password@host:port/database (there is no embedded MariaDB to reuse)")
	}
	c, err := mysqlcluster.Start(ctx, mysqlcluster.Options{Log: logf, Durable: true, ReadCommitted: true})
	if err != nil {
		return nil, fmt.Errorf("private MariaDB: %w", err)
	}
	d := &mysqlDatabase{Cluster: c, URL: c.URL(mysqlDatabaseName)}
	admin, err := sql.Open("mysql", c.DSN(""))
	if err == nil {
		_, err = admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+mysqlDatabaseName)
		admin.Close()
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("private MariaDB: create database: %w", err)
	}
	if doMigrate {
		if err := d.migrate(ctx); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// requireSchemaToServe refuses, in one line, to serve a database whose
// schema is not this binary's (serve --migrate=false, as on PostgreSQL).
func (d *mysqlDatabase) requireSchemaToServe(ctx context.Context) error {
	db, err := d.open(1)
	if err != nil {
		return err
	}
	defer db.Close()
	all, err := migrations.All()
	if err != nil {
		return err
	}
	applied, err := migrations.Applied(ctx, db)
	if err != nil {
		return err
	}
	if err := migrations.Check(ctx, db); len(applied) == 0 || errors.Is(err, migrations.ErrSchemaBehind) {
		return &exitError{code: 1, msg: fmt.Sprintf("the database's holdfast schema lacks %d of this binary's %d migrations: run holdfast migrate; --migrate=false refuses to start on it", len(all)-countKnown(all, applied), len(all))}
	} else if errors.Is(err, migrations.ErrSchemaAhead) {
		return &exitError{code: 1, msg: "the database's holdfast schema is newer than this binary: run a newer holdfast"}
	} else if err != nil {
		return err
	}
	return nil
}

// config is the driver configuration of the database, as the engine needs
// it (mysql.Configure).
func (d *mysqlDatabase) config() (*mysqldriver.Config, error) {
	cfg, err := mysql.ParseURL(d.URL)
	if err != nil {
		// The driver's errors may quote the DSN, password included.
		return nil, errors.New("DATABASE_URL is not a valid mysql:// URL (mysql://user:password@host:port/database)")
	}
	if cfg.DBName == "" {
		// Else the schema has nowhere to go, and MySQL's answers say
		// "No database selected" or a NULL lock name, not this.
		return nil, errors.New("DATABASE_URL names no database: add /dbname to it (mysql://user:password@host:port/database)")
	}
	mysql.Configure(cfg)
	return cfg, nil
}

// open opens a pool of maxConns connections.
func (d *mysqlDatabase) open(maxConns int) (*sql.DB, error) {
	cfg, err := d.config()
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(cfg) // several hosts: the writer only
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	return db, nil
}

// migrate brings the schema up to date.
func (d *mysqlDatabase) migrate(ctx context.Context) error {
	db, err := d.open(2)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := migrations.Up(ctx, db); err != nil {
		return fmt.Errorf("migrate MySQL schema: %w", err)
	}
	return nil
}

// openServedMySQL is the MySQL database of a command that works on the
// service's database (keys, webhooks, holds, ledger, doctor, top,
// migrate): DATABASE_URL (mysql://…) when set, else the private MariaDB of
// the `holdfast serve --engine mariadb` running with the same --data-dir
// (its URL file). It starts no server and neither migrates nor checks the
// schema: setup commands call migrate, read-only ones requireSchema.
func openServedMySQL(ctx context.Context, dataDir string) (*mysqlDatabase, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return &mysqlDatabase{URL: u}, nil
	}
	path := filepath.Join(dataDir, mysqlURLFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no private MariaDB of holdfast serve in %s: start `holdfast serve --engine mariadb` with this --data-dir first, pass the --data-dir serve uses, or set DATABASE_URL=mysql://…", dataDir)
	}
	if err != nil {
		return nil, err
	}
	d := &mysqlDatabase{URL: strings.TrimSpace(string(b))}
	db, err := d.open(1)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = db.PingContext(pctx)
		cancel()
		db.Close()
	}
	if err != nil {
		// The file outlives a serve that was killed: say so, not the URL.
		return nil, fmt.Errorf("the private MariaDB named in %s does not answer (is holdfast serve --engine mariadb still running with this --data-dir?)", path)
	}
	return d, nil
}

// requireSchema refuses, in one line, a database whose schema is not this
// binary's. Read-only commands call it instead of migrating: they never
// create or alter a schema.
func (d *mysqlDatabase) requireSchema(ctx context.Context) error {
	db, err := d.open(1)
	if err != nil {
		return err
	}
	defer db.Close()
	all, err := migrations.All()
	if err != nil {
		return err
	}
	applied, err := migrations.Applied(ctx, db)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		return errNoSchema
	}
	if err := migrations.Check(ctx, db); errors.Is(err, migrations.ErrSchemaBehind) {
		return fmt.Errorf("the database's holdfast schema lacks %d of this binary's %d migrations: run `holdfast migrate` first (this command never creates or changes the schema)", len(all)-countKnown(all, applied), len(all))
	} else if errors.Is(err, migrations.ErrSchemaAhead) {
		return errors.New("the database's holdfast schema is newer than this binary: run a newer holdfast")
	} else if err != nil {
		return err
	}
	return nil
}

// countKnown is how many of all's migrations applied records.
func countKnown(all []migrations.Migration, applied []int) int {
	done := map[int]bool{}
	for _, v := range applied {
		done[v] = true
	}
	n := 0
	for _, m := range all {
		if done[m.Version] {
			n++
		}
	}
	return n
}

// client opens the MySQL engine on a pool of maxConns connections.
func (d *mysqlDatabase) client(maxConns int, cfg holdfast.Config) (*mysql.Client, error) {
	db, err := d.open(maxConns)
	if err != nil {
		return nil, err
	}
	c, err := mysql.New(db, cfg)
	if err != nil {
		db.Close()
		return nil, configError(err)
	}
	return c, nil
}

// Close stops the private server, if any, and removes its data.
func (d *mysqlDatabase) Close() {
	if d.Cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), mysqlcluster.ReadyTimeout)
		defer cancel()
		_ = d.Cluster.Stop(ctx)
	}
}
