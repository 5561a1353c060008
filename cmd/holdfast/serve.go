package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/metrics"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/postgres/pgshadow"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/shadow"
)

func init() { register(newServeCmd) }

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "run the reservation service over HTTP/JSON",
		Args:  noArgs,
	}
	f := &serveFlags{}
	fs := cmd.Flags()
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address")
	dataDirVar(fs, &f.dataDir)
	f.engine = engineFlag(fs)
	fs.BoolVar(&f.doMigrate, "migrate", true, "apply pending migrations on start; false refuses to start when the schema is behind")
	fs.DurationVar(&f.sweep, "sweep-interval", 30*time.Second, "expiry sweeper interval")
	fs.DurationVar(&f.auditRetention, "audit-retention", holdfast.AuditRetentionDefault, "how long audit log entries are kept before the maintenance workers purge them (docs/OPERATIONS.md)")
	fs.DurationVar(&f.replenish, "replenish-interval", 5*time.Second, "pool replenisher interval")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics on this address instead of the API's")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or text")
	fs.IntVar(&f.maxConns, "max-conns", 20, "database connection pool size")
	fs.IntVar(&f.maxInFlight, "max-inflight", 0, "connection slots: database operations holding a connection of their own at once; one shop alone may take every slot, competing shops take turns; combined reservations wait in the engine's combiner without one (default: max-conns - 4)")
	fs.BoolVar(&f.pprof, "pprof", false, "serve net/http/pprof's /debug/pprof/ on --metrics-addr (never on the API's address)")
	fs.BoolVar(&f.logErrorsOnly, "log-errors-only", false, "log only requests answered 400 and above; successes are still counted in the metrics")
	fs.StringVar(&f.legacy.legacyURL, "legacy", "", "put the shadow layer in front of this Redis legacy store (redis://[user:password@]host:port/db) and holdfast; modes per shop, admin routes under /v1/admin/shadow/ (docs/MIGRATION.md)")
	fs.StringVar(&f.legacy.keyTemplate, "legacy-key-template", lredis.KeyTemplateDefault, "with --legacy: the legacy's stock counter key; {shop}, {item} and {location} are replaced")
	fs.StringVar(&f.legacy.prefix, "legacy-prefix", lredis.PrefixDefault, "with --legacy: the legacy's prefix of hold hashes and the expiry set")
	fs.DurationVar(&f.legacy.lifetime, "hold-lifetime-max", holdfast.HoldLifetimeMaxDefault, "with --legacy: the longest a legacy hold lives; a shop warms this long after entering shadow (the same as holdfast shadow's)")
	fs.IntVar(&f.maxQuantity, "max-quantity", holdfast.QuantityMaxDefault, "largest quantity of one line")
	fs.IntVar(&f.maxLines, "max-lines", holdfast.LinesPerCartMaxDefault, "most lines of one reservation")
	fs.DurationVar(&f.drain, "drain-timeout", httpapi.DrainTimeoutDefault, "how long shutdown waits for requests in flight")
	fs.DurationVar(&f.reqTimeout, "request-timeout", httpapi.RequestTimeoutDefault, "bound on one request; past it the answer is 503 unavailable")
	fs.StringVar(&f.otlpEndpoint, "otlp-endpoint", "", "export OpenTelemetry traces (a span per request and per SQL statement) over OTLP/HTTP to this URL, e.g. http://127.0.0.1:4318; empty: off unless OTEL_EXPORTER_OTLP_ENDPOINT is set")
	webhookFlagsVar(fs, &f.hooks, true)
	fs.StringVar(&f.podsConfig, "pods-config", "", "serve a deployment sharded by shop over pods: this JSON file names the control database and each pod (pods.go; docs/OPERATIONS.md, Pods); DATABASE_URL and --data-dir are then unused")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return runServe(cmd.Context(), f) }
	return cmd
}

// serveFlags are serve's settings.
type serveFlags struct {
	addr, dataDir, metricsAddr, logFormat, otlpEndpoint string
	legacy                                              shadowFlags // --legacy and its companions, as `holdfast shadow` takes them
	engine                                              *string     // --engine: postgres or mariadb (serve_mysql.go)
	doMigrate, pprof, logErrorsOnly                     bool
	sweep, replenish, drain, reqTimeout                 time.Duration
	maxConns, maxInFlight, maxQuantity, maxLines        int

	hooks webhookFlags // --webhook-allow-networks, --webhook-key, --webhook-key-file

	podsConfig string // --pods-config (pods.go)

	auditRetention time.Duration // --audit-retention (Config.AuditRetention)
}

func runServe(ctx context.Context, f *serveFlags) error {
	switch {
	case f.logFormat != "json" && f.logFormat != "text":
		return usageError("--log-format must be json or text")
	case f.maxConns < 5 || f.maxConns > 1000:
		return usageError("--max-conns must be between 5 and 1000")
	case f.maxInFlight < 0 || f.maxInFlight > f.maxConns:
		return usageError("--max-inflight must be between 1 and --max-conns")
	case f.pprof && f.metricsAddr == "":
		return usageError("--pprof needs --metrics-addr: the profiles are served there, never on the API's address")
	case f.maxQuantity < 1 || f.maxQuantity > holdfast.AvailableMax:
		return usageError("--max-quantity must be between 1 and %d", holdfast.AvailableMax)
	case f.maxLines < 1 || f.maxLines > 10_000:
		return usageError("--max-lines must be between 1 and 10000")
	case f.reqTimeout < 100*time.Millisecond || f.drain < 0:
		return usageError("--request-timeout must be at least 100ms and --drain-timeout not negative")
	case f.sweep < 100*time.Millisecond || f.replenish < 100*time.Millisecond:
		return usageError("--sweep-interval and --replenish-interval must be at least 100ms")
	case f.auditRetention < time.Hour:
		return usageError("--audit-retention must be at least 1h")
	}
	if f.maxInFlight == 0 {
		f.maxInFlight = f.maxConns - 4
	}
	engineName := enginePostgres
	if f.engine != nil {
		var err error
		if engineName, err = resolveEngine(*f.engine); err != nil {
			return err
		}
	}
	var redisOpts *goredis.Options
	if f.legacy.legacyURL != "" {
		opt, err := goredis.ParseURL(f.legacy.legacyURL)
		if err != nil {
			// No URL in the message: it may carry a password.
			return usageError("--legacy must be a Redis URL such as redis://127.0.0.1:6379/0 (rediss:// for TLS)")
		}
		if f.legacy.lifetime < holdfast.HoldTTLMin || f.legacy.lifetime > shadowLifetimeMax {
			return usageError("--hold-lifetime-max must be between %v and %v", holdfast.HoldTTLMin, shadowLifetimeMax)
		}
		redisOpts = opt
	}
	var h slog.Handler = slog.NewJSONHandler(os.Stderr, nil)
	if f.logFormat == "text" {
		h = slog.NewTextHandler(os.Stderr, nil)
	}
	log := slog.New(h)
	tuneServeGC()
	logf := func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }

	// Listen first: a taken port fails before the cluster starts.
	ln, err := listen(f.addr, "--addr")
	if err != nil {
		return err
	}
	defer ln.Close()
	var mln net.Listener
	if f.metricsAddr != "" {
		if mln, err = listen(f.metricsAddr, "--metrics-addr"); err != nil {
			return err
		}
		defer mln.Close()
	}

	if f.podsConfig != "" {
		return runPodsServe(ctx, f, log, ln, mln)
	}
	if engineName == engineMySQL {
		return runMySQLServe(ctx, f, log, ln, mln)
	}
	db, err := openDatabase(ctx, persistent, f.dataDir, logf)
	if err != nil {
		return err
	}
	defer db.Close()
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
	var qt pgx.QueryTracer // a nil *otelpgx.Tracer must stay a nil interface
	if tracer != nil {
		qt = tracer
		log.Info("tracing: a span per request and per SQL statement of the API's pool, exported over OTLP/HTTP")
	}
	if db.Cluster != nil {
		// No URL here: it carries the password.
		log.Info("embedded PostgreSQL running; other holdfast commands (keys, doctor, top, migrate) with the same --data-dir use it",
			"data_dir", db.Cluster.DataDir(), "port", db.Cluster.Port(), "password_file", db.Cluster.PasswordFile(),
			"attached", db.Cluster.Attached())
	}
	pool, err := db.tracedPool(ctx, int32(f.maxConns), "holdfast-serve", qt)
	if err != nil {
		return err
	}
	defer pool.Close()
	if f.doMigrate {
		applied, err := migrations.Up(ctx, pool)
		if err != nil {
			return err
		}
		if len(applied) > 0 {
			log.Info("applied migrations", "versions", fmt.Sprint(applied))
		}
	} else if err := migrations.Check(ctx, pool); err != nil {
		if errors.Is(err, migrations.ErrSchemaBehind) {
			return &exitError{code: 1, msg: err.Error() + "; --migrate=false refuses to start on it"}
		}
		return err
	}

	reg := prometheus.NewRegistry()
	engine := metrics.NewEngine()
	hc, err := postgres.New(pool, holdfast.Config{
		SweepInterval: f.sweep, ReplenishInterval: f.replenish,
		QuantityMax: f.maxQuantity, LinesPerCartMax: f.maxLines,
		AuditRetention: f.auditRetention,
		Logger:         log, Observer: engine,
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
	mon := pgops.NewMonitor(opsPool, pgops.MonitorConfig{
		Sampler: pgops.SamplerConfig{Logger: log},
		Bloat:   pgops.BloatConfig{Logger: log},
	})
	// Webhook delivery (docs/API.md): its own bounded pool of workers and
	// connections, so a slow endpoint never slows checkout.
	hookOpts, err := f.hooks.options(f.dataDir, true)
	if err != nil {
		return err
	}
	hooks, closeHooks, err := startWebhooks(ctx, db, hc, hookOpts, log)
	if err != nil {
		return err
	}
	defer closeHooks()
	cfg := httpapi.Config{
		Engine: hc, Store: pgstore.Service(pool), Logger: log, Registry: reg,
		Collectors: []prometheus.Collector{engine, mon.Sampler, mon.Bloat,
			collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})},
		Workers:      []httpapi.Worker{hc, mon, hooks},
		MaxInFlight:  f.maxInFlight,
		DrainTimeout: f.drain, RequestTimeout: f.reqTimeout, NoMetricsRoute: mln != nil,
		Pprof: f.pprof, LogErrorsOnly: f.logErrorsOnly, Webhooks: hookOpts,
	}
	if redisOpts != nil {
		sh, closeRedis, err := startShadow(ctx, redisOpts, &f.legacy, pool, hc, log)
		if err != nil {
			return err
		}
		defer closeRedis()
		// The layer answers every shop by its mode; its workers (mode
		// polling, comparison flushes, legacy expiry) run with the others.
		cfg.Engine, cfg.Shadow = shadowEngine{Engine: sh, bounds: hc.Config()}, sh
		cfg.Collectors = append(cfg.Collectors, sh.Collectors()...)
		cfg.Workers = append(cfg.Workers, sh)
	}
	srv, err := httpapi.New(cfg)
	if err != nil {
		return err
	}
	if mln != nil {
		ms := &http.Server{Handler: srv.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = ms.Serve(mln) }()
		defer ms.Close()
		log.Info("metrics listening", "addr", mln.Addr().String())
	}
	log.Info("holdfast serve listening", "addr", ln.Addr().String(), "max_inflight", f.maxInFlight,
		"schema_version", strconv.Itoa(migrations.Latest()), "shadow", redisOpts != nil)
	// Serve returns after ctx (SIGINT/SIGTERM) is cancelled and the drain:
	// the deferred calls then close the pool and stop the embedded cluster.
	return srv.Serve(ctx, ln)
}

// shadowEngine is the shadow layer as the API's engine, offering the
// holdfast engine's bounds (--max-quantity, --max-lines, the hold lifetime)
// so the API validates requests by them, as it does without the layer.
type shadowEngine struct {
	*shadow.Engine
	bounds holdfast.Config
}

// Config is the holdfast engine's configuration without its strategy: the
// layer combines nothing, so no reservation may skip a connection slot.
func (e shadowEngine) Config() holdfast.Config {
	c := e.bounds
	c.Strategy = ""
	return c
}

// startShadow puts the shadow layer (docs/MIGRATION.md) in front of the
// Redis legacy store and hc: the legacy adapter over Redis (key template,
// prefix and hold lifetime as `holdfast shadow` takes them) and its SQL
// ledger in pool's database (created when missing), and the layer's modes
// and comparison records there too. The layer's workers run the legacy's
// expiry sweep. It returns the layer and a func that closes the Redis
// client.
func startShadow(ctx context.Context, opt *goredis.Options, lf *shadowFlags, pool *pgxpool.Pool, hc *postgres.Client, log *slog.Logger) (*shadow.Engine, func(), error) {
	// A bare dial first: go-redis logs every failed dial of its pool.
	dctx, cancel := context.WithTimeout(ctx, legacyPingTimeout)
	c, err := (&net.Dialer{}).DialContext(dctx, opt.Network, opt.Addr)
	cancel()
	if err != nil {
		return nil, nil, legacyDown(opt.Addr, err)
	}
	c.Close()
	rdb := goredis.NewClient(opt)
	store, err := legacyStore(ctx, rdb, pool, lf)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	sh, err := shadow.New(ctx, pgshadow.NewStore(pool), store, hc, shadow.Config{Logger: log, HoldLifetimeMax: lf.lifetime})
	if err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	log.Info("shadow layer on: shops answer by their mode; admin routes under /v1/admin/shadow/", "legacy_redis", opt.Addr,
		"shops_enrolled", len(sh.ShopModes()))
	return sh, func() { _ = rdb.Close() }, nil
}
