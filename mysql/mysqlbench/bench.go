// Package mysqlbench is the MySQL and MariaDB side of bench/hotbench: a
// hotbench.Target on a MySQL or MariaDB server — its pools, a fresh
// database per run (CREATE/DROP DATABASE), its commit-ceiling statements,
// the MySQL engine on a migrated database, its caller transactions (hot-tx's
// simulated checkout work is SELECT SLEEP) and its error numbers. It is
// `holdfast bench --engine mariadb`:
//
//	hotbench.Run(ctx, mysqlbench.New(server), hotbench.Options{…})
//
// The runner, its audit and its report are hotbench's; package bench, built
// on pgx end to end, is PostgreSQL's fuller bench.
package mysqlbench

import (
	"context"
	"database/sql"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/bench/hotbench"
	"github.com/holdfast/holdfast/internal/sqltext"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = sqltext.Load("mysqlbench", sqlFiles, "sql")

// statement returns the embedded SQL file name.sql with the bench's comment.
func statement(name string) string { return statements.Tagged("bench", name) }

// txWork is hot-tx's simulated checkout work: SELECT SLEEP(seconds).
var txWork = statement("tx_work")

// Target is a MySQL or MariaDB server to bench on. Close it when done.
type Target struct {
	server *mysqldriver.Config
	prefix string
	seq    atomic.Int64

	admin *sql.DB // CREATE and DROP DATABASE; opened on first use
	err   error

	pidOnce sync.Once
	pid     int // the server's process, when local; 0 unknown
}

var (
	_ hotbench.Target = (*Target)(nil)
	_ hotbench.Meter  = (*Target)(nil)
)

// serverNames are the command names of a MySQL or MariaDB server process.
var serverNames = []string{"mysqld", "mariadbd"}

// Sample reads the server process's CPU time (when the server runs on this
// machine: its pid file is readable and names a mysqld or mariadbd) and
// InnoDB's current redo LSN.
func (t *Target) Sample(ctx context.Context) (hotbench.Sample, error) {
	s := hotbench.Sample{CPU: -1, Log: -1}
	if t.err != nil {
		return s, t.err
	}
	t.pidOnce.Do(func() {
		var path string
		if t.admin.QueryRowContext(ctx, statement("server_pid_file")).Scan(&path) == nil {
			t.pid, _ = hotbench.PIDFile(path)
		}
	})
	if t.pid > 0 {
		if cpu, err := hotbench.ServerCPU(t.pid, serverNames, false); err == nil {
			s.CPU = cpu
		}
	}
	var lsn string
	if err := t.admin.QueryRowContext(ctx, statement("redo_lsn")).Scan(&lsn); err == nil {
		if n, err := strconv.ParseInt(lsn, 10, 64); err == nil {
			s.Log = n
		}
	}
	return s, nil
}

// New returns the Target on server (any database; its user needs CREATE
// and DROP).
func New(server *mysqldriver.Config) *Target {
	t := &Target{server: server, prefix: fmt.Sprintf("hfbench_%d_", os.Getpid())}
	if server == nil {
		t.err = errors.New("mysqlbench: a server configuration is required")
		return t
	}
	t.admin, t.err = t.open("", 2)
	return t
}

// Close closes the Target's administrative pool.
func (t *Target) Close() error {
	if t.admin == nil {
		return nil
	}
	return t.admin.Close()
}

// Engine names the engine: "MySQL".
func (t *Target) Engine() string { return "MySQL" }

// Strategies lists the MySQL engine's strategies, in order.
func (t *Target) Strategies() []string {
	var out []string
	for _, s := range mysql.Strategies() {
		out = append(out, string(s))
	}
	return out
}

// Server is the server's version comment and version.
func (t *Target) Server(ctx context.Context) (string, error) {
	if t.err != nil {
		return "", t.err
	}
	var s string
	err := t.admin.QueryRowContext(ctx, "SELECT concat(@@version_comment, ' ', @@version)").Scan(&s)
	return s, err
}

// ErrorKind names a MySQL error by its number ("mysql 1213").
func (t *Target) ErrorKind(err error) string {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return fmt.Sprintf("mysql %d", me.Number)
	}
	return ""
}

// open opens a pool on database (empty: none selected), configured as the
// engine needs.
func (t *Target) open(database string, maxConns int) (*sql.DB, error) {
	cfg := t.server.Clone()
	cfg.DBName = database
	mysql.Configure(cfg)
	conn, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	return db, nil
}

// Database creates a fresh database and opens a pool of conns on it.
func (t *Target) Database(ctx context.Context, conns int) (hotbench.Database, error) {
	if t.err != nil {
		return nil, t.err
	}
	// The name is ours (prefix, pid, counter): no user input reaches it.
	name := fmt.Sprintf("%s%d", t.prefix, t.seq.Add(1))
	if _, err := t.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("mysqlbench: create database: %w", err)
	}
	d := &database{t: t, name: name, ctx: ctx}
	db, err := t.open(name, conns)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.db = db
	return d, nil
}

// database is one run's database.
type database struct {
	t    *Target
	name string
	ctx  context.Context // the creating call's, for the DROP
	db   *sql.DB
	eng  *mysql.Client
}

func (d *database) Close() {
	if d.db != nil {
		d.db.Close()
	}
	_, _ = d.t.admin.ExecContext(context.WithoutCancel(d.ctx), "DROP DATABASE IF EXISTS "+d.name)
}

// Ceiling creates the scratch table; the INSERT autocommits.
func (d *database) Ceiling(ctx context.Context) (func(context.Context) error, error) {
	if _, err := d.db.ExecContext(ctx, statement("ceiling_schema")); err != nil {
		return nil, err
	}
	insert := statement("ceiling_insert")
	return func(ctx context.Context) error {
		id := uuid.New()
		_, err := d.db.ExecContext(ctx, insert, id[:])
		return err
	}, nil
}

// Limit creates the durable limit's tables; each hold is a transaction of
// the counter row's UPDATE and one multi-row INSERT.
func (d *database) Limit(ctx context.Context, stripes int) (hotbench.LimitHold, error) {
	for _, name := range []string{"limit_counter_schema", "limit_holds_schema"} {
		if _, err := d.db.ExecContext(ctx, statement(name)); err != nil {
			return nil, err
		}
	}
	if _, err := d.db.ExecContext(ctx, statement("limit_fill"), stripes); err != nil {
		return nil, err
	}
	take, insert := statement("limit_take"), statement("limit_insert")
	return func(ctx context.Context, stripe int, ids []uuid.UUID) error {
		hexIDs := make([]string, len(ids))
		for i, id := range ids {
			hexIDs[i] = hex.EncodeToString(id[:])
		}
		js, err := json.Marshal(hexIDs)
		if err != nil {
			return err
		}
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, take, len(ids), stripe); err == nil {
			_, err = tx.ExecContext(ctx, insert, string(js))
		}
		if err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}, nil
}

func (d *database) Engine(ctx context.Context, strategy string) (holdfast.Engine, error) {
	if _, err := migrations.Up(ctx, d.db); err != nil {
		return nil, fmt.Errorf("mysqlbench: migrate: %w", err)
	}
	eng, err := mysql.New(d.db, holdfast.Config{Strategy: holdfast.Strategy(strategy)})
	if err != nil {
		return nil, err
	}
	d.eng = eng
	return eng, nil
}

func (d *database) ReserveTx(ctx context.Context, p holdfast.ReserveParams, work time.Duration) (bool, error) {
	tx, err := d.db.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		return false, err
	}
	if _, err = d.eng.ReserveTx(ctx, tx, p); err == nil {
		_, err = tx.ExecContext(ctx, txWork, work.Seconds())
	}
	if err != nil {
		_ = tx.Rollback()
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return true, err
	}
	return false, nil
}
