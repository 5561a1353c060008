package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/metrics"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqlstore"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/webhook"
)

// mysqlURLFile is where `holdfast serve --engine mariadb` on its private
// MariaDB leaves the server's mysql:// URL (mode 0600, in --data-dir) while
// it runs, so every command with --engine mariadb and the same --data-dir
// (openServedMySQL) reaches the same database. It is removed when serve stops.
const mysqlURLFile = "mariadb-serve.url"

// runMySQLServe is serve on the MySQL engine: DATABASE_URL (mysql://…), or
// a private MariaDB that lives as long as serve does. ln and mln are
// serve's listeners, already bound.
func runMySQLServe(ctx context.Context, f *serveFlags, log *slog.Logger, ln, mln net.Listener) error {
	switch {
	case f.legacy.legacyURL != "":
		return usageError("--legacy runs on --engine %s only", enginePostgres)
	}
	// One private MariaDB per --data-dir: a second serve there would start
	// another server and take the URL file the CLI reaches the first by.
	if os.Getenv("DATABASE_URL") == "" {
		if _, err := openServedMySQL(ctx, f.dataDir); err == nil {
			return &exitError{code: 1, msg: fmt.Sprintf("a holdfast serve --engine mariadb already runs with --data-dir %s (its private MariaDB answers at the URL in %s): stop it first, pass another --data-dir, or set DATABASE_URL to serve a database of your own",
				f.dataDir, filepath.Join(f.dataDir, mysqlURLFile))}
		}
	}
	logf := func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	tracer, stopTracing, err := startTracing(ctx, f.otlpEndpoint)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(ctx); err != nil {
			log.Warn("tracing: flushing spans", "err", err.Error())
		}
	}()
	if tracer != nil {
		log.Info("tracing: a span per request (no SQL statement spans on MariaDB), exported over OTLP/HTTP")
	}
	db, err := openMySQLDatabaseAs(ctx, true, f.doMigrate, logf)
	if err != nil {
		return err
	}
	defer db.Close()
	if !f.doMigrate {
		// As on PostgreSQL: a schema behind this binary is refused.
		if err := db.requireSchemaToServe(ctx); err != nil {
			return err
		}
	}
	if db.Cluster != nil {
		path, err := writeMySQLURL(f.dataDir, db.URL)
		if err != nil {
			return err
		}
		// Removed only while it is still this serve's: never another's.
		defer func() {
			if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == db.URL {
				os.Remove(path)
			}
		}()
		// No URL here: it carries the password.
		log.Info("private MariaDB running; its data is removed when serve stops (set DATABASE_URL=mysql://… to keep it); every holdfast command with --engine mariadb and the same --data-dir uses it",
			"port", db.Cluster.Port(), "url_file", path)
	}
	reg := prometheus.NewRegistry()
	engine := metrics.NewEngine()
	mc, err := db.client(f.maxConns, holdfast.Config{
		SweepInterval: f.sweep, ReplenishInterval: f.replenish,
		QuantityMax: f.maxQuantity, LinesPerCartMax: f.maxLines,
		AuditRetention: f.auditRetention,
		Logger:         log, Observer: engine,
	})
	if err != nil {
		return err
	}
	defer mc.DB().Close()
	// Webhook delivery (docs/API.md): its own bounded pool of workers and
	// connections, so a slow endpoint never slows checkout.
	hooksDB, err := db.open(2)
	if err != nil {
		return err
	}
	defer hooksDB.Close()
	hookOpts, err := f.hooks.options(f.dataDir, true)
	if err != nil {
		return err
	}
	hooks, err := webhook.NewDeliverer(webhook.Config{Store: mysqlstore.Webhooks(hooksDB), Events: mc, Logger: log, Options: hookOpts})
	if err != nil {
		return err
	}
	srv, err := httpapi.New(httpapi.Config{
		Engine: mc, Store: mysqlstore.Service(mc.DB()), Strategies: mysql.Strategies(), Logger: log, Registry: reg,
		Collectors:   []prometheus.Collector{engine, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})},
		Workers:      []httpapi.Worker{mc, hooks},
		MaxInFlight:  f.maxInFlight,
		DrainTimeout: f.drain, RequestTimeout: f.reqTimeout, NoMetricsRoute: mln != nil,
		Pprof: f.pprof, LogErrorsOnly: f.logErrorsOnly, Webhooks: hookOpts,
	})
	if err != nil {
		return err
	}
	if mln != nil {
		ms := &http.Server{Handler: srv.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = ms.Serve(mln) }()
		defer ms.Close()
		log.Info("metrics listening", "addr", mln.Addr().String())
	}
	all, err := migrations.All()
	if err != nil {
		return err
	}
	log.Info("holdfast serve listening", "addr", ln.Addr().String(), "engine", engineMySQL, "max_inflight", f.maxInFlight,
		"schema_version", strconv.Itoa(all[len(all)-1].Version))
	// Serve returns after ctx (SIGINT/SIGTERM) is cancelled and the drain:
	// the deferred calls then close the pool and stop the private server.
	return srv.Serve(ctx, ln)
}

// writeMySQLURL leaves the private server's URL in dataDir for `holdfast
// keys`, readable by this user only, and returns its path.
func writeMySQLURL(dataDir, url string) (string, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dataDir, mysqlURLFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(url+"\n"), 0o600); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// withRegistry runs f on the webhook registry of the keys' database
// (withKeyStore's: PostgreSQL, or MariaDB with --engine mariadb or a
// mysql:// DATABASE_URL).
func withRegistry(ctx context.Context, engineFlag string, mode dbMode, dataDir string, schema schemaUse, opts webhook.Options, f func(context.Context, *webhook.Registry) error) error {
	return withServiceDB(ctx, engineFlag, mode, dataDir, schema,
		func(db *sql.DB) error { return f(ctx, webhook.NewRegistry(mysqlstore.Webhooks(db)).With(opts)) },
		func(pool *pgxpool.Pool) error { return f(ctx, webhook.NewRegistry(pgstore.Webhooks(pool)).With(opts)) })
}
