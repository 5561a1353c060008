package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/metrics"
	"github.com/holdfast/holdfast/migrate"
	"github.com/holdfast/holdfast/ops"
)

func init() {
	register(&command{name: "serve", summary: "run the reservation service over HTTP/JSON", run: runServe})
}

// envDefault returns the environment variable's value, or def.
func envDefault(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", envDefault("HOLDFAST_ADDR", "127.0.0.1:8080"), "listen address (env HOLDFAST_ADDR)")
	dataDir := fs.String("data-dir", defaultDataDir, "embedded cluster directory, when DATABASE_URL is unset; survives restarts")
	doMigrate := fs.Bool("migrate", true, "apply pending migrations on start; false refuses to start when the schema is behind")
	sweep := fs.Duration("sweep-interval", 30*time.Second, "expiry sweeper interval")
	replenish := fs.Duration("replenish-interval", 5*time.Second, "pool replenisher interval")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics on this address instead of the API's")
	logFormat := fs.String("log-format", "json", "log format: json or text")
	maxConns := fs.Int("max-conns", 20, "database connection pool size")
	maxInFlight := fs.Int("max-inflight", 0, "database operations in flight (default: max-conns - 4)")
	perShop := fs.Int("per-shop-inflight", 0, "one shop's share of max-inflight (default: three quarters of it)")
	queueWait := fs.Duration("queue-wait", httpapi.QueueWaitDefault, "how long a request waits for an in-flight slot before 503")
	maxQuantity := fs.Int("max-quantity", holdfast.QuantityMaxDefault, "largest quantity of one line")
	maxLines := fs.Int("max-lines", holdfast.LinesPerCartMaxDefault, "most lines of one reservation")
	drain := fs.Duration("drain-timeout", httpapi.DrainTimeoutDefault, "how long shutdown waits for requests in flight")
	reqTimeout := fs.Duration("request-timeout", httpapi.RequestTimeoutDefault, "bound on one request; past it the answer is 503 unavailable")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	switch {
	case *logFormat != "json" && *logFormat != "text":
		return fmt.Errorf("%w: --log-format must be json or text", errUsage)
	case *maxConns < 5 || *maxConns > 1000:
		return fmt.Errorf("%w: --max-conns must be between 5 and 1000", errUsage)
	case *maxInFlight < 0 || *maxInFlight > *maxConns:
		return fmt.Errorf("%w: --max-inflight must be between 1 and --max-conns", errUsage)
	case *perShop < 0:
		return fmt.Errorf("%w: --per-shop-inflight must be positive", errUsage)
	case *maxQuantity < 1 || *maxQuantity > holdfast.AvailableMax:
		return fmt.Errorf("%w: --max-quantity must be between 1 and %d", errUsage, holdfast.AvailableMax)
	case *maxLines < 1 || *maxLines > 10_000:
		return fmt.Errorf("%w: --max-lines must be between 1 and 10000", errUsage)
	case *reqTimeout < 100*time.Millisecond || *drain < 0:
		return fmt.Errorf("%w: --request-timeout must be at least 100ms and --drain-timeout not negative", errUsage)
	case *sweep < 100*time.Millisecond || *replenish < 100*time.Millisecond:
		return fmt.Errorf("%w: --sweep-interval and --replenish-interval must be at least 100ms", errUsage)
	}
	if *maxInFlight == 0 {
		*maxInFlight = *maxConns - 4
	}
	var h slog.Handler = slog.NewJSONHandler(os.Stderr, nil)
	if *logFormat == "text" {
		h = slog.NewTextHandler(os.Stderr, nil)
	}
	log := slog.New(h)
	logf := func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }

	// Listen first: a taken port fails before the cluster starts.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	var mln net.Listener
	if *metricsAddr != "" {
		if mln, err = net.Listen("tcp", *metricsAddr); err != nil {
			return err
		}
		defer mln.Close()
	}

	db, err := openDatabase(ctx, persistent, *dataDir, logf)
	if err != nil {
		return err
	}
	defer db.Close()
	if db.Cluster != nil {
		log.Info("embedded PostgreSQL running; set DATABASE_URL to it to run other holdfast commands (keys, doctor) while serve runs",
			"data_dir", db.Cluster.DataDir(), "DATABASE_URL", db.URL)
	}
	pool, err := db.pool(ctx, int32(*maxConns), "holdfast-serve")
	if err != nil {
		return err
	}
	defer pool.Close()
	if *doMigrate {
		applied, err := migrate.Up(ctx, pool)
		if err != nil {
			return err
		}
		if len(applied) > 0 {
			log.Info("applied migrations", "versions", fmt.Sprint(applied))
		}
	} else if err := migrate.Check(ctx, pool); err != nil {
		if errors.Is(err, migrate.ErrSchemaBehind) {
			return &exitError{code: 1, msg: err.Error() + "; --migrate=false refuses to start on it"}
		}
		return err
	}

	reg := prometheus.NewRegistry()
	engine := metrics.NewEngine()
	hc, err := holdfast.New(pool, holdfast.Config{
		SweepInterval: *sweep, ReplenishInterval: *replenish,
		QuantityMax: *maxQuantity, LinesPerCartMax: *maxLines,
		Logger: log, Observer: engine,
	})
	if err != nil {
		return err
	}
	// The operations sampler (pg_stat_activity, bloat) gets its own small
	// pool, so it never competes with requests for a connection and shows
	// up under its own application_name.
	opsPool, err := db.pool(ctx, 2, "holdfast-ops")
	if err != nil {
		return err
	}
	defer opsPool.Close()
	mon := ops.NewMonitor(opsPool, ops.MonitorConfig{
		Sampler: ops.SamplerConfig{Logger: log},
		Bloat:   ops.BloatConfig{Logger: log},
	})
	srv, err := httpapi.New(httpapi.Config{
		Client: hc, Logger: log, Registry: reg,
		Collectors: []prometheus.Collector{engine, mon.Sampler, mon.Bloat,
			collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})},
		Workers:     []httpapi.Worker{hc, mon},
		MaxInFlight: *maxInFlight, PerShopInFlight: *perShop, QueueWait: *queueWait,
		DrainTimeout: *drain, RequestTimeout: *reqTimeout, NoMetricsRoute: mln != nil,
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
	log.Info("holdfast serve listening", "addr", ln.Addr().String(), "max_inflight", *maxInFlight,
		"schema_version", strconv.Itoa(migrate.Latest()))
	// Serve returns after ctx (SIGINT/SIGTERM) is cancelled and the drain:
	// the deferred calls then close the pool and stop the embedded cluster.
	return srv.Serve(ctx, ln)
}
