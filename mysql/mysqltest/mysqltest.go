// Package mysqltest gives tests real MySQL/MariaDB: one server per test
// binary and one freshly migrated database per test, dropped when the test
// ends.
//
// The server is TEST_MYSQL_URL when set (mysql://user:password@host:port/,
// or a go-sql-driver DSN; the account needs CREATE and DROP on databases);
// otherwise a private throwaway MariaDB started from the locally installed
// server binaries (see mysqlcluster), so tests never depend on a system
// server on port 3306.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { mysqltest.Main(m) }
package mysqltest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/holdfast/holdfast/internal/heavy"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqlcluster"
)

var (
	server  *mysql.Config // the server under test, no database
	cluster *mysqlcluster.Cluster
	seq     atomic.Int64
)

// Main starts the server, runs the tests and tears everything down. It
// calls os.Exit.
func Main(m *testing.M) {
	os.Exit(run(m))
}

// MainHeavy is Main for a heavy test binary (the MySQL engine's own: the
// conformance suite, the seed race and the fault tests keep every core
// busy): it holds the machine-wide heavy-suite lock (heavy.Lock) from
// before its server starts until it stops.
func MainHeavy(m *testing.M) {
	release := heavy.Lock()
	code := run(m)
	release()
	os.Exit(code)
}

// StartTimeout bounds starting the private server.
const StartTimeout = 3 * time.Minute

func run(m interface{ Run() int }) int {
	// The driver logs every connection a fault test kills; the tests read
	// the errors themselves.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if u := os.Getenv("TEST_MYSQL_URL"); u != "" {
		cfg, err := ParseURL(u)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mysqltest: TEST_MYSQL_URL:", err)
			return 1
		}
		cfg.DBName = ""
		server = cfg
	} else {
		c, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "mysqltest:", err)
			return 1
		}
		cluster = c
		defer c.Stop(context.Background()) //nolint:errcheck
		server = c.Config("")
	}
	return m.Run()
}

// ParseURL turns a mysql:// URL (mysql://user:password@host:port/database?
// param=value) or a go-sql-driver DSN into a driver configuration. It
// mirrors mysql.ParseURL, which tests of package mysql cannot import from
// here.
func ParseURL(u string) (*mysql.Config, error) {
	if !strings.HasPrefix(u, "mysql://") && !strings.HasPrefix(u, "mariadb://") {
		return mysql.ParseDSN(u)
	}
	p, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	cfg := mysql.NewConfig()
	if p.RawQuery != "" {
		if cfg, err = mysql.ParseDSN("/?" + p.RawQuery); err != nil {
			return nil, err
		}
	}
	cfg.Net, cfg.Addr = "tcp", p.Host
	if p.Port() == "" {
		cfg.Addr = net.JoinHostPort(p.Hostname(), "3306")
	}
	cfg.User = p.User.Username()
	cfg.Passwd, _ = p.User.Password()
	cfg.DBName = strings.TrimPrefix(p.Path, "/")
	return cfg, nil
}

// Database is one isolated, migrated database.
type Database struct {
	Name string
	// Config is the driver configuration the pool was opened with.
	Config *mysql.Config
	DB     *sql.DB
}

// Open opens another pool on the database, for tests that need a second
// client or a connection of their own.
func (d *Database) Open(t testing.TB, maxConns int) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", d.Config.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	t.Cleanup(func() { db.Close() })
	return db
}

// DB creates a fresh migrated database for t and drops it when t ends. The
// pool allows maxConns connections (0 means 20).
func DB(t testing.TB, maxConns int) *Database {
	t.Helper()
	d := EmptyDB(t, maxConns)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := migrations.Up(ctx, d.DB); err != nil {
		t.Fatalf("mysqltest: migrate: %v", err)
	}
	return d
}

// EmptyDB is DB without the schema, for tests of migrations themselves.
func EmptyDB(t testing.TB, maxConns int) *Database {
	t.Helper()
	if server == nil {
		t.Fatal("mysqltest: call mysqltest.Main from TestMain")
	}
	ctx := context.Background()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), seq.Add(1))
	admin, err := sql.Open("mysql", server.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("mysqltest: create database: %v", err)
	}
	cfg := server.Clone()
	cfg.DBName = name
	Configure(cfg)
	if maxConns == 0 {
		maxConns = 20
	}
	d := &Database{Name: name, Config: cfg}
	d.DB = d.Open(t, maxConns)
	t.Cleanup(func() {
		a, err := sql.Open("mysql", server.FormatDSN())
		if err == nil {
			_, _ = a.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name)
			a.Close()
		}
	})
	return d
}

// Configure sets what the MySQL engine needs of its connections: times
// parsed as UTC, arguments interpolated client-side (one round trip per
// statement instead of prepare, execute and close) and a lock wait bound.
// It mirrors mysql.Configure, which tests of package mysql cannot import
// from here.
func Configure(cfg *mysql.Config) {
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	if _, ok := cfg.Params["innodb_lock_wait_timeout"]; !ok {
		cfg.Params["innodb_lock_wait_timeout"] = "5"
	}
}

// Cluster is the private server the tests run on, or nil when they run on
// TEST_MYSQL_URL. Fault tests use it to restart the server.
func Cluster() *mysqlcluster.Cluster { return cluster }

// Server is the driver configuration of the server under test, with no
// database selected.
func Server() *mysql.Config { return server.Clone() }

// Runner wraps m so that its Run starts this package's server first (and
// stops it after): for pgtest.Run(mysqltest.Runner(m)).
func Runner(m *testing.M) interface{ Run() int } { return runner{m} }

type runner struct{ m *testing.M }

func (r runner) Run() int { return run(r.m) }
