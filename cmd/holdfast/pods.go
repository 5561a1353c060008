package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/metrics"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mysqlstore"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/postgres"
	migrate "github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/podmap"
	"github.com/holdfast/holdfast/webhook"
)

// Bounds of a pods configuration file.
const (
	podConnsDefault     = 10
	podConnsMax         = 200
	controlConnsDefault = 4
	podsConfigMax       = 1 << 20 // bytes of the file
	podPingTimeout      = 3 * time.Second
)

// podsFile is a --pods-config file (docs/OPERATIONS.md, Pods):
//
//	{"control": {"url_env": "HOLDFAST_CONTROL_URL"},
//	 "default_pod": "",
//	 "cache_ttl": "5s",
//	 "pods": [{"name": "a", "engine": "postgres", "url_env": "POD_A_URL", "max_conns": 10},
//	          {"name": "b", "engine": "mariadb", "url": "mysql://hf:pw@10.0.0.2:3306/hf"}]}
//
// A URL is given inline (url) or, to keep passwords out of the file, as the
// name of an environment variable that holds it (url_env).
type podsFile struct {
	Control    podsEndpoint `json:"control"`
	DefaultPod string       `json:"default_pod"`
	CacheTTL   string       `json:"cache_ttl"`
	Pods       []podsEntry  `json:"pods"`
}

type podsEndpoint struct {
	URL      string `json:"url"`
	URLEnv   string `json:"url_env"`
	MaxConns int    `json:"max_conns"`
}

type podsEntry struct {
	podsEndpoint
	Name   string `json:"name"`
	Engine string `json:"engine"`
	// MaxInFlight bounds the calls on the pod at once (pods.Pod.MaxInFlight;
	// combined reservations aside). Defaults to MaxConns.
	MaxInFlight int `json:"max_in_flight"`
}

func (e podsEndpoint) url(what string) (string, error) {
	switch {
	case e.URL != "" && e.URLEnv != "":
		return "", usageError("--pods-config: %s: give url or url_env, not both", what)
	case e.URLEnv != "":
		u := os.Getenv(e.URLEnv)
		if u == "" {
			return "", usageError("--pods-config: %s: environment variable %s (url_env) is empty", what, e.URLEnv)
		}
		return u, nil
	case e.URL == "":
		return "", usageError("--pods-config: %s: url or url_env is required", what)
	}
	return e.URL, nil
}

// loadPodsFile reads and checks a --pods-config file.
func loadPodsFile(path string) (*podsFile, time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, usageError("--pods-config: %v", err)
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, podsConfigMax))
	dec.DisallowUnknownFields()
	var pf podsFile
	if err := dec.Decode(&pf); err != nil {
		return nil, 0, usageError("--pods-config %s: %v", path, err)
	}
	var ttl time.Duration
	if pf.CacheTTL != "" {
		if ttl, err = time.ParseDuration(pf.CacheTTL); err != nil || ttl <= 0 || ttl > pods.CacheTTLMax {
			return nil, 0, usageError("--pods-config: cache_ttl must be a duration between 1ms and %v", pods.CacheTTLMax)
		}
	}
	if len(pf.Pods) == 0 || len(pf.Pods) > pods.PodsMax {
		return nil, 0, usageError("--pods-config: pods: between 1 and %d", pods.PodsMax)
	}
	seen := map[string]bool{}
	for i := range pf.Pods {
		p := &pf.Pods[i]
		switch {
		case !pods.ValidName(p.Name):
			return nil, 0, usageError("--pods-config: pods[%d].name %q: %s", i, p.Name, pods.NameRule)
		case seen[p.Name]:
			return nil, 0, usageError("--pods-config: pod %s is named twice", p.Name)
		case p.Engine == "":
			p.Engine = enginePostgres
		}
		seen[p.Name] = true
		switch p.Engine { // the names --engine takes, aliases included
		case "mariadb":
			p.Engine = engineMySQL
		case "postgresql":
			p.Engine = enginePostgres
		}
		if p.Engine != enginePostgres && p.Engine != engineMySQL {
			return nil, 0, usageError("--pods-config: pod %s: engine must be %s or %s", p.Name, enginePostgres, engineMySQL)
		}
		if p.MaxConns == 0 {
			p.MaxConns = podConnsDefault
		}
		if p.MaxConns < 2 || p.MaxConns > podConnsMax {
			return nil, 0, usageError("--pods-config: pod %s: max_conns must be between 2 and %d", p.Name, podConnsMax)
		}
		if p.MaxInFlight == 0 {
			p.MaxInFlight = p.MaxConns
		}
		if p.MaxInFlight < 1 || p.MaxInFlight > 10*podConnsMax {
			return nil, 0, usageError("--pods-config: pod %s: max_in_flight must be between 1 and %d", p.Name, 10*podConnsMax)
		}
	}
	if pf.DefaultPod != "" && !seen[pf.DefaultPod] {
		return nil, 0, usageError("--pods-config: default_pod %s is not one of the pods", pf.DefaultPod)
	}
	if pf.Control.MaxConns == 0 {
		pf.Control.MaxConns = controlConnsDefault
	}
	if pf.Control.MaxConns < 2 || pf.Control.MaxConns > podConnsMax {
		return nil, 0, usageError("--pods-config: control.max_conns must be between 2 and %d", podConnsMax)
	}
	return &pf, ttl, nil
}

// podSet is the opened deployment: the control database and each pod's
// engine, with what closes them.
type podSet struct {
	file    *podsFile
	control *pgxpool.Pool
	pods    []pods.Pod
	pgPools map[string]*pgxpool.Pool // the PostgreSQL pods' pools, by name
	myDBs   map[string]*sql.DB       // the MariaDB pods' pools, by name
	closers []func()
}

func (s *podSet) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// openPods opens the control database (migrating the map and, for the API
// keys the service keeps there, holdfast's schema, when doMigrate) and
// every pod (migrated when doMigrate, else checked), each on a pool of its
// own bounded by its max_conns. engines false opens pools only (the
// status command). A pod that cannot be reached fails serve's start: a
// deployment starts whole (a pod that dies later only turns its own shops
// away).
func openPods(ctx context.Context, pf *podsFile, cfg holdfast.Config, doMigrate, engines bool, log *slog.Logger) (*podSet, error) {
	s := &podSet{file: pf, pgPools: map[string]*pgxpool.Pool{}, myDBs: map[string]*sql.DB{}}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	cu, err := pf.Control.url("control")
	if err != nil {
		return nil, err
	}
	if s.control, err = pgPool(ctx, cu, pf.Control.MaxConns, "holdfast-pods-control"); err != nil {
		return nil, fmt.Errorf("control database: %w", err)
	}
	s.closers = append(s.closers, s.control.Close)
	if doMigrate {
		if _, err := podmap.Migrate(ctx, s.control); err != nil {
			return nil, fmt.Errorf("control database: %w", err)
		}
		if _, err := migrate.Up(ctx, s.control); err != nil {
			return nil, fmt.Errorf("control database: %w", err)
		}
	}
	for _, p := range pf.Pods {
		u, err := p.url("pod " + p.Name)
		if err != nil {
			return nil, err
		}
		pod := pods.Pod{Name: p.Name, MaxInFlight: p.MaxInFlight}
		switch p.Engine {
		case enginePostgres:
			pool, err := pgPool(ctx, u, p.MaxConns, "holdfast-pod-"+p.Name)
			if err != nil {
				return nil, fmt.Errorf("pod %s: %w", p.Name, err)
			}
			s.closers = append(s.closers, pool.Close)
			s.pgPools[p.Name] = pool
			// The probe has a connection of its own: a pool that a busy
			// pod filled must not make its probe fail.
			probe, err := pgPool(ctx, u, 1, "holdfast-pod-probe-"+p.Name)
			if err != nil {
				return nil, fmt.Errorf("pod %s: %w", p.Name, err)
			}
			s.closers = append(s.closers, probe.Close)
			pod.Ping = probe.Ping
			if doMigrate {
				if _, err := migrate.Up(ctx, pool); err != nil {
					return nil, fmt.Errorf("pod %s: %w", p.Name, err)
				}
			} else if engines {
				if err := migrate.Check(ctx, pool); err != nil {
					return nil, fmt.Errorf("pod %s: %w", p.Name, err)
				}
			}
			if engines {
				if pod.Engine, err = postgres.New(pool, cfg); err != nil {
					return nil, fmt.Errorf("pod %s: %w", p.Name, err)
				}
			}
		case engineMySQL:
			if doMigrate {
				if err := migrateMariaDBPod(ctx, u); err != nil {
					return nil, fmt.Errorf("pod %s: %w", p.Name, err)
				}
			}
			c, err := mysql.Open(u, p.MaxConns, cfg) // checks the schema
			if err != nil {
				return nil, fmt.Errorf("pod %s: %w", p.Name, err)
			}
			db := c.DB()
			s.closers = append(s.closers, func() { _ = db.Close() })
			s.myDBs[p.Name] = db
			probe, err := mariaDBPool(u, 1)
			if err != nil {
				return nil, fmt.Errorf("pod %s: %w", p.Name, err)
			}
			s.closers = append(s.closers, func() { _ = probe.Close() })
			pod.Ping = probe.PingContext
			if engines {
				pod.Engine = c
			}
		}
		s.pods = append(s.pods, pod)
	}
	ok = true
	return s, nil
}

// migrateMariaDBPod applies holdfast's pending migrations to a MariaDB pod
// on a short-lived pool of its own.
func migrateMariaDBPod(ctx context.Context, u string) error {
	db, err := mariaDBPool(u, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = migrations.Up(ctx, db)
	return err
}

// mariaDBPool is a small pool on a MariaDB pod, configured as the engine's.
func mariaDBPool(u string, maxConns int) (*sql.DB, error) {
	dc, err := mysql.ParseURL(u)
	if err != nil {
		return nil, err
	}
	mysql.Configure(dc)
	db, err := sql.Open("mysql", dc.FormatDSN())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(maxConns)
	return db, nil
}

func pgPool(ctx context.Context, u string, maxConns int, app string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		// pgx's parse errors quote the URL, which may carry a password.
		return nil, errors.New("not a valid PostgreSQL connection string")
	}
	cfg.MaxConns = int32(maxConns)
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// runPodsServe is serve over pods (--pods-config): the router is the API's
// engine; API keys live in the control database. ln and mln are serve's
// listeners, already bound.
func runPodsServe(ctx context.Context, f *serveFlags, log *slog.Logger, ln, mln net.Listener) error {
	switch {
	case f.legacy.legacyURL != "":
		return usageError("--legacy and --pods-config cannot be combined")
	case f.engine != nil && *f.engine != "" && *f.engine != enginePostgres:
		return usageError("with --pods-config each pod names its engine in the file; leave --engine unset")
	}
	pf, ttl, err := loadPodsFile(f.podsConfig)
	if err != nil {
		return err
	}
	observer := metrics.NewEngine()
	set, err := openPods(ctx, pf, holdfast.Config{
		SweepInterval: f.sweep, ReplenishInterval: f.replenish,
		QuantityMax: f.maxQuantity, LinesPerCartMax: f.maxLines,
		Logger: log, Observer: observer,
	}, f.doMigrate, true, log)
	if err != nil {
		return err
	}
	defer set.Close()
	router, err := pods.New(ctx, podmap.New(set.control), set.pods, pods.Config{DefaultPod: pf.DefaultPod, CacheTTL: ttl, Logger: log})
	if err != nil {
		return configError(err)
	}
	inFlight := f.maxInFlight
	if inFlight == 0 {
		// Slots across the pods: each pod's pool less the connections its
		// maintenance may take.
		for _, p := range pf.Pods {
			inFlight += max(p.MaxConns-2, 1)
		}
		inFlight = min(inFlight, 1000)
	}
	// Webhooks: a shop's endpoints live on its pod (a move carries them);
	// each pod's deliverer delivers its shops' events.
	hookOpts, err := f.hooks.options(f.dataDir, true)
	if err != nil {
		return err
	}
	hooks := podsWebhooks{r: router, stores: map[string]webhook.Store{}}
	var deliverers podsDeliverers
	for _, name := range router.Pods() {
		var st webhook.Store
		if pool := set.pgPools[name]; pool != nil {
			st = pgstore.Webhooks(pool)
		} else if db := set.myDBs[name]; db != nil {
			st = mysqlstore.Webhooks(db)
		} else {
			continue
		}
		hooks.stores[name] = st
		d, err := webhook.NewDeliverer(webhook.Config{Store: st, Events: router.Engine(name), Logger: log.With("pod", name), Options: hookOpts})
		if err != nil {
			return err
		}
		deliverers = append(deliverers, d)
	}
	// The admin routes' moves (/v1/admin/pods/moves): stopped, undone
	// before their switch, ahead of the router and the pools.
	mover, closeMoves, err := newPodsMover(ctx, pf, router, log)
	if err != nil {
		return err
	}
	defer closeMoves()
	srv, err := httpapi.New(httpapi.Config{
		Engine: router, Store: podsServiceStore{Store: pgstore.Service(set.control), hooks: hooks}, Logger: log,
		Collectors: append(append(router.Collectors(), pods.MoveCollectors()...), observer,
			collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		Registry:     prometheus.NewRegistry(),
		Workers:      []httpapi.Worker{router, deliverers, mover},
		Pods:         mover,
		Webhooks:     hookOpts,
		MaxInFlight:  inFlight,
		DrainTimeout: f.drain, RequestTimeout: f.reqTimeout, NoMetricsRoute: mln != nil,
		Pprof: f.pprof, LogErrorsOnly: f.logErrorsOnly,
		// The console's doctor page checks the pods, not the control
		// database the API's pool is on.
		Console: httpapi.ConsoleConfig{Doctor: set.doctor},
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
	log.Info("holdfast serve listening over pods", "addr", ln.Addr().String(), "max_inflight", inFlight,
		"pods", strings.Join(router.Pods(), ","), "default_pod", pf.DefaultPod)
	return srv.Serve(ctx, ln)
}

func init() { register(newPodsCmd) }

func newPodsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pods",
		Short: "inspect a deployment sharded by shop over pods (--pods-config)",
		Long: `A deployment over pods keeps each shop on one pod (a database with holdfast's schema)
and the shard map (shop → pod) in a control database; holdfast serve --pods-config routes
each request by shop. docs/OPERATIONS.md (Pods) and docs/PODS.md.`,
		Args: noArgs,
	}
	cmd.AddCommand(newPodsListCmd(), newPodsStatusCmd(), newPodsDoctorCmd(), newPodsNewShopsCmd(), newPodsMoveCmd(), newPodsAbortCmd())
	return cmd
}

func newPodsNewShopsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "new-shops",
		Short: "let the placement policy put new shops on a pod, or not (--off drains it of new shops; its shops stay)",
		Args:  noArgs,
	}
	fs := cmd.Flags()
	path := fs.String("pods-config", "", "the pods configuration file (as serve takes it)")
	pod := fs.String("pod", "", "the pod")
	off := fs.Bool("off", false, "refuse new shops (default: accept them)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		pf, _, err := loadPodsFile(*path)
		if err != nil {
			return err
		}
		if *pod == "" {
			return usageError("--pod is required")
		}
		cu, err := pf.Control.url("control")
		if err != nil {
			return err
		}
		pool, err := pgPool(ctx, cu, 2, "holdfast-pods")
		if err != nil {
			return fmt.Errorf("control database: %w", err)
		}
		defer pool.Close()
		if err := podmap.New(pool).SetAcceptsNew(ctx, *pod, !*off); err != nil {
			if errors.Is(err, pods.ErrUnknownPod) {
				return usageError("--pod %s: no such pod in the map (a pod is registered when serve first starts with it)", *pod)
			}
			return fmt.Errorf("control database: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "pod %s: new shops %s\n", *pod, yesNo(*off, "refused", "accepted"))
		return nil
	}
	return cmd
}

func newPodsListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "list the pods with their shop counts (--shops: every shop's pod)", Args: noArgs}
	fs := cmd.Flags()
	path := fs.String("pods-config", "", "the pods configuration file (as serve takes it)")
	shops := fs.Bool("shops", false, "list every shop's placement instead")
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		pf, _, err := loadPodsFile(*path)
		if err != nil {
			return err
		}
		cu, err := pf.Control.url("control")
		if err != nil {
			return err
		}
		pool, err := pgPool(ctx, cu, 2, "holdfast-pods")
		if err != nil {
			return fmt.Errorf("control database: %w", err)
		}
		defer pool.Close()
		m := podmap.New(pool)
		out := cmd.OutOrStdout()
		if *shops {
			var all []pods.Placement
			for after := int64(0); ; {
				page, err := m.List(ctx, after, pods.ListLimitMax)
				if err != nil {
					return fmt.Errorf("control database: %w", err)
				}
				all = append(all, page...)
				if len(page) < pods.ListLimitMax {
					break
				}
				after = page[len(page)-1].ShopID
			}
			if *asJSON {
				return writeIndented(out, all)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SHOP\tPOD\tEPOCH\tASSIGNED")
			for _, p := range all {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", p.ShopID, p.Pod, p.Epoch, p.AssignedAt.UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		}
		infos, err := m.Pods(ctx)
		if err != nil {
			return fmt.Errorf("control database: %w", err)
		}
		if *asJSON {
			return writeIndented(out, infos)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POD\tSHOPS\tNEW SHOPS\tCONFIGURED")
		conf := map[string]bool{}
		for _, p := range pf.Pods {
			conf[p.Name] = true
		}
		for _, in := range infos {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", in.Name, in.Shops, yesNo(in.AcceptsNew, "accepted", "refused"), yesNo(conf[in.Name], "yes", "NO"))
		}
		return tw.Flush()
	}
	return cmd
}

// podHealth is one line of `holdfast pods status`.
type podHealth struct {
	Pod     string `json:"pod"`
	Engine  string `json:"engine"`
	Up      bool   `json:"up"`
	PingMS  int64  `json:"ping_ms"`
	Shops   int    `json:"shops"`
	Problem string `json:"problem,omitempty"`
}

func newPodsStatusCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "status", Short: "ping the control database and every pod, check their schemas (exit 2 when any is down)", Args: noArgs}
	fs := cmd.Flags()
	path := fs.String("pods-config", "", "the pods configuration file (as serve takes it)")
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		pf, _, err := loadPodsFile(*path)
		if err != nil {
			return err
		}
		var rows []podHealth
		counts := map[string]int{}
		cu, err := pf.Control.url("control")
		if err != nil {
			return err
		}
		control := podHealth{Pod: "(control)", Engine: enginePostgres}
		if pool, err := pgPool(ctx, cu, 2, "holdfast-pods"); err != nil {
			control.Problem = err.Error()
		} else {
			start := time.Now()
			pctx, cancel := context.WithTimeout(ctx, podPingTimeout)
			infos, err := podmap.New(pool).Pods(pctx)
			cancel()
			control.PingMS = time.Since(start).Milliseconds()
			if err != nil {
				control.Problem = err.Error()
			} else {
				control.Up = true
				for _, in := range infos {
					counts[in.Name] = in.Shops
					control.Shops += in.Shops
				}
			}
			pool.Close()
		}
		rows = append(rows, control)
		for _, p := range pf.Pods {
			h := podHealth{Pod: p.Name, Engine: p.Engine, Shops: counts[p.Name]}
			h.Up, h.PingMS, h.Problem = pingPod(ctx, p)
			rows = append(rows, h)
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			if err := writeIndented(out, rows); err != nil {
				return err
			}
		} else {
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "POD\tENGINE\tSTATE\tPING\tSHOPS\tPROBLEM")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%dms\t%d\t%s\n", r.Pod, r.Engine, yesNo(r.Up, "up", "DOWN"), r.PingMS, r.Shops, r.Problem)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		down := 0
		for _, r := range rows {
			if !r.Up {
				down++
			}
		}
		if down > 0 {
			return &exitError{code: 2, msg: fmt.Sprintf("%d of %d databases down or not ready", down, len(rows))}
		}
		return nil
	}
	return cmd
}

// pingPod connects to one pod, pings it and checks its schema is this
// binary's, within podPingTimeout.
func pingPod(ctx context.Context, p podsEntry) (up bool, ms int64, problem string) {
	u, err := p.url("pod " + p.Name)
	if err != nil {
		return false, 0, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, podPingTimeout)
	defer cancel()
	start := time.Now()
	switch p.Engine {
	case engineMySQL:
		db, err := mariaDBPool(u, 1)
		if err != nil {
			return false, 0, err.Error()
		}
		defer db.Close()
		if err = db.PingContext(ctx); err == nil {
			err = migrations.Check(ctx, db)
		}
		if err != nil {
			return false, time.Since(start).Milliseconds(), err.Error()
		}
	default:
		pool, err := pgPool(ctx, u, 2, "holdfast-pods")
		if err != nil {
			return false, 0, err.Error()
		}
		defer pool.Close()
		if err = pool.Ping(ctx); err == nil {
			err = migrate.Check(ctx, pool)
		}
		if err != nil {
			return false, time.Since(start).Milliseconds(), err.Error()
		}
	}
	return true, time.Since(start).Milliseconds(), ""
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
