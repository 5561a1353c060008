package httpapi

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/console"
	"github.com/holdfast/holdfast/shadow"
	"github.com/holdfast/holdfast/webhook"
)

// Bounds and defaults of the service.
const (
	// BodyMax bounds a request body: larger ones get 413.
	BodyMax = 1 << 20
	// MaxInFlightDefault bounds the database operations in flight.
	MaxInFlightDefault = 16
	// RequestTimeoutDefault bounds one request's work; past it the answer
	// is 503 unavailable.
	RequestTimeoutDefault = 10 * time.Second
	// DrainTimeoutDefault bounds a graceful shutdown's wait for requests in
	// flight.
	DrainTimeoutDefault = 30 * time.Second
	// KeyCacheTTLDefault is how long a server trusts a key it looked up;
	// a revocation reaches it within this time.
	KeyCacheTTLDefault = 5 * time.Second
	// requestIDMax bounds an honoured X-Request-Id.
	requestIDMax = 128
)

// Worker is a background service the server starts with Serve and stops
// after draining: *postgres.Client (sweeper and replenisher) and
// *maint.Worker have this shape.
type Worker interface {
	Start(ctx context.Context)
	Stop(ctx context.Context) error
}

// Config configures a Server. The zero value of each field but Engine and
// Store means its default.
type Config struct {
	// Engine is the engine the API translates to. Required. Request
	// validation uses its bounds (LinesPerCartMax, QuantityMax,
	// HoldLifetimeMax) when it offers Config() holdfast.Config, as both of
	// holdfast's engines do.
	Engine holdfast.Engine
	// Store is where the service keeps its API keys and webhook registry,
	// in the engine's database, and checks readiness: pgstore.Service or
	// mysqlstore.Service. Required.
	Store Store
	// Strategies are the allocation strategies the engine offers, for the
	// strategy routes' validation. Defaults to the engine's Strategies()
	// when it has that method, else holdfast.Strategies().
	Strategies []holdfast.Strategy
	// Webhooks are the destinations webhook registrations may name and
	// the key their secrets are sealed with (holdfast serve
	// --webhook-allow-networks, --webhook-key-file); the deliverer must
	// be given the same. The zero value: public destinations only,
	// secrets in plaintext.
	Webhooks webhook.Options
	// Logger receives one line per request. Defaults to slog.Default().
	Logger *slog.Logger
	// Registry is where the server registers its metrics and Collectors,
	// and what /metrics exports. Defaults to a new registry.
	Registry *prometheus.Registry
	// Collectors are registered on Registry: the engine's observer
	// (metrics.Engine), samplers.
	Collectors []prometheus.Collector
	// Workers are started by Serve and stopped after the drain, in reverse
	// order.
	Workers []Worker
	// MaxInFlight is the number of connection slots: database operations
	// that need a connection of their own, in flight at once. Reservations
	// that join a combined batch wait in the engine's combiner instead (up
	// to CombineInFlightMax). Defaults to 16; keep it below the pool's
	// size.
	MaxInFlight int
	// RequestTimeout bounds one request. Defaults to 10s. A client may ask
	// for less with the X-Request-Timeout header (a Go duration: "250ms").
	RequestTimeout time.Duration
	// DrainTimeout bounds the graceful shutdown. Defaults to 30s.
	DrainTimeout time.Duration
	// KeyCacheTTL is how long a looked-up key is trusted. Defaults to 5s;
	// negative disables the caches (of live and of unknown keys).
	KeyCacheTTL time.Duration
	// RefusalDelay is how long the answer to a request with a missing,
	// malformed, unknown, expired or revoked key (401), or whose key could
	// not be looked up because lookups are past their bound (503
	// overloaded), is held before it is sent: a flood of bad keys is slowed
	// to one request per client per delay (refusal.go). Defaults to
	// RefusalDelayDefault (1s); negative: answered at once.
	RefusalDelay time.Duration
	// LogErrorsOnly writes the per-request log line only for answers of
	// 400 and above; successes are still counted in the metrics. Off by
	// default: one line per request.
	LogErrorsOnly bool
	// TracerProvider gives every request a span named for its route
	// ("holdfast reserve"), the parent of the engine's statement spans.
	// Defaults to OpenTelemetry's global provider, a no-op until one is
	// installed (holdfast serve installs one with --otlp-endpoint).
	TracerProvider trace.TracerProvider
	// Pprof adds net/http/pprof's /debug/pprof/ to MetricsHandler (never
	// to the API handler): serve it on its own address to profile a
	// running server.
	Pprof bool
	// Shadow is the shadow layer (package shadow) when the engine is one:
	// it turns on the operator's routes under /v1/admin/shadow/ (admin
	// keys only). Defaults to Engine when that is a *shadow.Engine; nil,
	// those routes answer 404 shadow_off.
	Shadow *shadow.Engine
	// Pods is the deployment over pods the admin routes /v1/admin/pods/…
	// show and move shops across (serve --pods-config: a *pods.Mover). Nil:
	// they answer 404 pods_off.
	Pods Pods
	// NoMetricsRoute leaves /metrics off the API handler (serve it with
	// MetricsHandler on its own listener). On the API handler /metrics
	// needs an admin key.
	NoMetricsRoute bool
	// Console configures the operator console at /console (ConsoleConfig).
	Console ConsoleConfig
}

// Server is the HTTP/JSON API. It is an http.Handler, safe for concurrent
// use.
type Server struct {
	cfg    Config
	eng    holdfast.Engine
	store  Store
	log    *slog.Logger
	adm    *admission
	auth   *authenticator
	refuse *refusals
	batch  bool // the engine's default strategy combines one-line reservations
	limits limits
	mux    *http.ServeMux
	reg    *prometheus.Registry
	tracer trace.Tracer

	seriesCache sync.Map // seriesKey → series
	seriesCount atomic.Int64

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge

	console *console.Console // nil when it is off (console.go)
}

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the API's OpenAPI 3.1 document.
func OpenAPI() []byte { return openAPI }

// New returns a Server. It registers its metrics on cfg.Registry.
func New(cfg Config) (*Server, error) {
	if sh, ok := cfg.Engine.(*shadow.Engine); ok && cfg.Shadow == nil {
		cfg.Shadow = sh
	}
	if cfg.Engine == nil {
		return nil, errors.New("httpapi: Config.Engine is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("httpapi: Config.Store is required (pgstore.Service, mysqlstore.Service): the API keys live there")
	}
	return newServer(cfg)
}

// newServer builds a server from a checked cfg (Store may be nil only for
// the ceiling).
func newServer(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = MaxInFlightDefault
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = RequestTimeoutDefault
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DrainTimeoutDefault
	}
	if cfg.KeyCacheTTL == 0 {
		cfg.KeyCacheTTL = KeyCacheTTLDefault
	}
	if cfg.RefusalDelay == 0 {
		cfg.RefusalDelay = RefusalDelayDefault
	}
	var ec holdfast.Config
	if c, ok := cfg.Engine.(interface{ Config() holdfast.Config }); ok {
		ec = c.Config()
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	s := &Server{
		tracer: cfg.TracerProvider.Tracer("github.com/holdfast/holdfast/httpapi"),
		cfg:    cfg,
		eng:    cfg.Engine,
		store:  cfg.Store,
		log:    cfg.Logger,
		adm:    newAdmission(cfg.MaxInFlight, QueueMax),
		auth:   newAuthenticator(cfg.Store, cfg.KeyCacheTTL),
		refuse: &refusals{delay: cfg.RefusalDelay},
		batch:  ec.Strategy == holdfast.StrategyBatch,
		limits: limits{LinesPerCartMax: ec.LinesPerCartMax, QuantityMax: ec.QuantityMax, HoldLifetimeMax: ec.HoldLifetimeMax, WaitMax: holdfast.WaitMaxOf(ec)}.withDefaults(),
		mux:    http.NewServeMux(),
		reg:    cfg.Registry,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "holdfast_http_requests_total",
			Help: "HTTP requests by route, status and outcome (an error code, or ok).",
		}, []string{"route", "status", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "holdfast_http_request_duration_seconds",
			Help:    "HTTP request latency by route and outcome (an error code, or ok).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "outcome"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "holdfast_http_in_flight_requests",
			Help: "HTTP requests being served.",
		}),
	}
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "holdfast_http_admission_waiting",
		Help: "Requests waiting for a connection slot.",
	}, func() float64 { return float64(s.adm.waiting()) })
	combining := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "holdfast_http_admission_combining",
		Help: "Combinable reservations admitted without a connection slot, in flight.",
	}, func() float64 { return float64(s.adm.combining.Load()) })
	refused := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "holdfast_http_admission_refused_total",
		Help: "Requests turned away (503 overloaded) because they could not be served within their deadline.",
	}, func() float64 { return float64(s.adm.refused.Load()) })
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "holdfast_http_refusals_held",
		Help: "Answers to requests with a missing or bad key being held before they are sent (Config.RefusalDelay).",
	}, func() float64 { return float64(s.refuse.held.Load()) })
	cs := append([]prometheus.Collector{s.requests, s.duration, s.inFlight, waiting, combining, refused, held}, cfg.Collectors...)
	if c, ok := cfg.Store.(prometheus.Collector); ok {
		cs = append(cs, c) // the pool's statistics, pool="api"
	}
	for _, c := range cs {
		if err := s.reg.Register(c); err != nil {
			return nil, fmt.Errorf("httpapi: register metrics: %w", err)
		}
	}
	s.routes()
	if err := s.consoleRoutes(); err != nil {
		return nil, err
	}
	return s, nil
}

// Registry is the server's metrics registry: register more collectors on it.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// MetricsHandler serves the registry in Prometheus text format at /metrics,
// without a key: serve it on its own address, not the API's. With
// Config.Pprof it also serves /debug/pprof/. Every other path is 404 (a
// console or API path tried on this address must not look like it works).
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.metricsOnly())
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "404 not found: this address serves /metrics only (and /debug/pprof/ with --pprof); the API and the console are on --addr", http.StatusNotFound)
	})
	if !s.cfg.Pprof {
		return mux
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func (s *Server) metricsOnly() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelError)})
}

// Serve starts the workers and serves on ln until ctx is cancelled, then
// shuts down gracefully: it stops accepting, waits for requests in flight
// (at most DrainTimeout), then stops the workers. It returns nil after a
// clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.cfg.RequestTimeout + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	for _, w := range s.cfg.Workers {
		w.Start(ctx)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	s.log.Info("shutting down: draining requests in flight", "timeout", s.cfg.DrainTimeout.String())
	dctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	err := hs.Shutdown(dctx)
	if serveErr == nil {
		serveErr = <-errc
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	for i := len(s.cfg.Workers) - 1; i >= 0; i-- {
		err = errors.Join(err, s.cfg.Workers[i].Stop(dctx))
	}
	s.auth.stop(dctx) // no key's last-used write outlives Serve (the caller closes the pool next)
	s.log.Info("shut down")
	return errors.Join(serveErr, err)
}

// reqInfo is what the route wrapper learns about a request, for the log line.
type reqInfo struct {
	route string
	shop  int64
	keyID int64
	auth  string // why the key was refused (badKeyError.reason), if it was
	rid   string // the request id answered in X-Request-Id
}

type infoKey struct{}

// recorder remembers a response's status, size and error code.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
	code   string
	wrote  bool
}

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.status, r.wrote = http.StatusOK, true
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// ServeHTTP implements http.Handler: request id, dispatch, one log line and
// the request metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rid := r.Header.Get("X-Request-Id")
	if !validRequestID(rid) {
		rid = newRequestID()
	}
	w.Header().Set("X-Request-Id", rid)
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	info := &reqInfo{route: "unmatched", rid: rid}
	r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
	s.inFlight.Inc()
	defer func() {
		s.inFlight.Dec()
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic serving request", "request_id", rid, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !rec.wrote {
				writeError(rec, &apiError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error; see the server log for this request id"})
			}
		}
		s.finish(r, rec, info, rid, time.Since(start))
	}()
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.unmatched(rec, r)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

func (s *Server) finish(r *http.Request, rec *recorder, info *reqInfo, rid string, d time.Duration) {
	outcome := rec.code
	if outcome == "" {
		outcome = "ok"
	}
	m := s.series(info.route, rec.status, outcome)
	m.requests.Inc()
	m.duration.Observe(d.Seconds())
	s.observeConsole(info, rec.status, d)
	if s.cfg.LogErrorsOnly && rec.status < 400 {
		return
	}
	level := slog.LevelInfo
	if rec.status >= 500 {
		level = slog.LevelWarn
		if rec.status == http.StatusInternalServerError {
			level = slog.LevelError
		}
	}
	var buf [10]slog.Attr // every attribute below: no allocation of its own
	attrs := append(buf[:0],
		slog.String("request_id", rid),
		slog.String("method", r.Method),
		slog.String("route", info.route),
		slog.Int("status", rec.status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Int("bytes", rec.bytes),
	)
	if info.shop != 0 {
		attrs = append(attrs, slog.Int64("shop", info.shop))
	}
	if info.keyID != 0 {
		attrs = append(attrs, slog.Int64("key_id", info.keyID))
	}
	if info.auth != "" {
		attrs = append(attrs, slog.String("key_refused", info.auth))
	}
	if rec.code != "" {
		attrs = append(attrs, slog.String("code", rec.code))
	}
	s.log.LogAttrs(r.Context(), level, "request", attrs...)
}

// seriesKey names one route's metric series for a status and outcome.
type seriesKey struct {
	route   string
	status  int
	outcome string
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// seriesMax bounds the cached series; routes, statuses and codes are
// finite, so it is never reached in practice.
const seriesMax = 4096

// series returns the request metrics of one route, status and outcome,
// resolving the labels once rather than on every request.
func (s *Server) series(route string, status int, outcome string) series {
	k := seriesKey{route, status, outcome}
	if m, ok := s.seriesCache.Load(k); ok {
		return m.(series)
	}
	m := series{
		requests: s.requests.WithLabelValues(route, strconv.Itoa(status), outcome),
		duration: s.duration.WithLabelValues(route, outcome),
	}
	if s.seriesCount.Add(1) <= seriesMax {
		s.seriesCache.Store(k, m)
	}
	return m
}

// unmatched answers requests no route matches: the mux's own 404 and 405
// (with its Allow header) in the API's error format; anything else the mux
// decides (a redirect to the cleaned path) as it is.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) {
	c := &capture{header: http.Header{}}
	h, _ := s.mux.Handler(r)
	h.ServeHTTP(c, r)
	switch c.status {
	case http.StatusNotFound:
		writeError(w, &apiError{Status: http.StatusNotFound, Code: CodeRouteNotFound, Message: "no route " + r.URL.Path})
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", c.header.Get("Allow"))
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
			Message: fmt.Sprintf("method %s not allowed here; allowed: %s", r.Method, c.header.Get("Allow"))})
	default:
		for k, v := range c.header {
			w.Header()[k] = v
		}
		w.WriteHeader(c.status)
		_, _ = w.Write(c.body)
	}
}

type capture struct {
	header http.Header
	status int
	body   []byte
}

func (c *capture) Header() http.Header { return c.header }
func (c *capture) WriteHeader(s int) {
	if c.status == 0 {
		c.status = s
	}
}
func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body = append(c.body, b...)
	return len(b), nil
}

func validRequestID(id string) bool {
	if id == "" || len(id) > requestIDMax {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// requestIDPrefix is this process's random prefix of the request ids it
// makes; a counter makes them unique within the process.
var (
	requestIDPrefix = func() string {
		var b [8]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	requestIDSeq atomic.Uint64
)

func newRequestID() string {
	b := make([]byte, 0, 32)
	b = append(b, requestIDPrefix...)
	b = append(b, '-')
	b = strconv.AppendUint(b, requestIDSeq.Add(1), 36)
	return string(b)
}

// call is one authenticated API request on its way to the engine.
type call struct {
	s     *Server
	r     *http.Request
	ctx   context.Context
	route string
	shop  int64
	body  []byte
}

// do runs fn on a connection slot of the request's shop (see admission).
func (c *call) do(fn func(ctx context.Context) error) error {
	release, err := c.s.adm.acquire(c.ctx, c.shop)
	if err != nil {
		return err
	}
	defer release()
	return fn(c.ctx)
}

// doCombinable runs fn, a reservation the engine will combine with others,
// without a connection slot: it waits in the engine's combiner, which holds
// the connections. Past CombineInFlightMax it takes a slot like any other.
func (c *call) doCombinable(fn func(ctx context.Context) error) error {
	done, ok := c.s.adm.admitCombined()
	if !ok {
		return c.do(fn)
	}
	defer done()
	return fn(c.ctx)
}

// routeOpts says what a route needs before its handler runs.
type routeOpts struct {
	body     bool  // a JSON body is required
	optional bool  // a JSON body is allowed (must be {} when sent)
	scope    Scope // the key's scope the route needs ("": any)
	admin    bool  // an admin key is required (operator settings)
	pods     bool  // an admin route of the pods (pods.go), not of the shadow layer
}

type handlerFunc func(c *call) (int, any, error)

// handle registers an API route: authentication, shop isolation, scopes,
// body limits and content type, then fn.
func (s *Server) handle(pattern, route string, o routeOpts, fn handlerFunc) {
	// Once per route, not per request.
	spanName, spanKind := "holdfast "+route, trace.WithSpanKind(trace.SpanKindServer)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		info, _ := r.Context().Value(infoKey{}).(*reqInfo)
		info.route = route
		timeout, apiErr := s.timeout(r)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		ctx, span := s.tracer.Start(ctx, spanName, spanKind)
		defer span.End()
		c := &call{s: s, r: r, ctx: holdfast.WithTag(ctx, "http"), route: route}
		var status int
		var body any
		err := s.prepare(c, info, o)
		if err == nil {
			status, body, err = fn(c)
		}
		if err != nil {
			ae := s.apiErrorOf(route, err)
			if span.IsRecording() {
				span.SetAttributes(attribute.Int("http.response.status_code", ae.Status), attribute.String("holdfast.error_code", ae.Code))
				if ae.Status >= 500 {
					span.SetStatus(codes.Error, ae.Code)
				}
			}
			if ae.Status >= 500 && ae.Code != CodeOverloaded {
				s.log.Warn("request failed", "request_id", w.Header().Get("X-Request-Id"), "route", route, "code", ae.Code, "error", err.Error())
			}
			writeError(w, ae)
			return
		}
		if span.IsRecording() {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		writeJSON(w, status, body)
	})
}

// timeout is the request's own deadline: RequestTimeout, or less when the
// client asks with X-Request-Timeout.
func (s *Server) timeout(r *http.Request) (time.Duration, *apiError) {
	v := r.Header.Get("X-Request-Timeout")
	if v == "" {
		return s.cfg.RequestTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, badRequest(CodeWrongType, "X-Request-Timeout", "X-Request-Timeout must be a positive duration such as 250ms, not %q", v)
	}
	return min(d, s.cfg.RequestTimeout), nil
}

// bearer authenticates the request's bearer key.
func (s *Server) bearer(ctx context.Context, r *http.Request) (principal, error) {
	scheme, key, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		s.refuse.hold(ctx)
		if info, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
			info.auth = "missing"
		}
		return principal{}, &apiError{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: "an Authorization: Bearer <key> header is required"}
	}
	p, err := s.auth.authenticate(ctx, strings.TrimSpace(key))
	if bad := (*badKeyError)(nil); errors.As(err, &bad) {
		s.refuse.hold(ctx)
		// The log line always says why, with the key's id when known.
		if info, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
			info.keyID, info.auth = bad.keyID, bad.reason
		}
		return p, refusedKey(bad)
	}
	if ae := (*apiError)(nil); errors.As(err, &ae) && ae.Code == CodeOverloaded {
		s.refuse.hold(ctx) // lookups past their bound: a flood's answer too
	}
	return p, err
}

// refusedKey is the answer to a refused key: expired and revoked keys have
// their own codes (only the key's holder can learn it), a malformed or
// unknown key says where to look.
func refusedKey(bad *badKeyError) *apiError {
	e := &apiError{Status: http.StatusUnauthorized, Code: CodeUnauthorized}
	switch bad.reason {
	case keyMalformed:
		e.Message = "the bearer is not a holdfast key (" + strconv.Itoa(keyLen) + " characters starting with " + keyPrefix + "); check the Authorization header"
	case keyExpired:
		e.Code = CodeKeyExpired
		e.Message = "key " + strconv.FormatInt(bad.keyID, 10) + " has expired (a rotated key's grace period ended, or its expiry passed); use its replacement or create a new key with holdfast keys create"
	case keyRevoked:
		e.Code = CodeKeyRevoked
		e.Message = "key " + strconv.FormatInt(bad.keyID, 10) + " was revoked; create a new key with holdfast keys create"
	default:
		e.Message = "unknown key: this server's database has no such key (made against another --data-dir or DATABASE_URL?); create one with holdfast keys create against the database serve uses"
	}
	return e
}

// prepare authenticates the request, checks its shop and scope and reads
// its body.
func (s *Server) prepare(c *call, info *reqInfo, o routeOpts) error {
	r := c.r
	p, err := s.bearer(c.ctx, r)
	if err != nil {
		return err
	}
	info.keyID = p.keyID
	// Who makes the changes of this request, and from where: the audit
	// log's (audit.go).
	c.ctx = holdfast.WithActor(c.ctx, holdfast.Actor{KeyID: p.keyID, KeyName: p.name, Via: "http",
		Remote: r.RemoteAddr, RequestID: info.rid})
	shop, apiErr := parseID("shop_id", r.PathValue("shop_id"))
	if apiErr != nil {
		return apiErr
	}
	info.shop, c.shop = shop, shop
	if !p.mayAccess(shop) {
		return &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Message: "this key does not reach shop " + strconv.FormatInt(shop, 10)}
	}
	if o.admin && !p.admin {
		return &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Message: "this route needs an admin key (holdfast keys create --admin)"}
	}
	if !p.has(o.scope) {
		return &apiError{Status: http.StatusForbidden, Code: CodeForbidden, Message: "this key lacks the " + string(o.scope) + " scope this route needs"}
	}
	if !o.body && !o.optional {
		return nil
	}
	if o.optional && r.ContentLength == 0 {
		return nil
	}
	if r.ContentLength > BodyMax {
		return tooLarge()
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 && o.body {
		// No body at all: say what the body must hold, not that the
		// (absent) content type is wrong.
		return nil
	}
	if ct == "application/json" {
		// The usual header: no parse (ParseMediaType builds a map).
	} else if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return &apiError{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMedia, Field: "Content-Type",
			Message: fmt.Sprintf("Content-Type must be application/json, not %q", ct)}
	}
	b, err := readBody(r)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge()
	}
	if err != nil {
		return badRequest(CodeMalformedJSON, "", "cannot read the body: %v", err)
	}
	c.body = b
	return nil
}

// bodyPreallocMax bounds the buffer readBody allocates from a body's
// Content-Length before its bytes arrive: a client declaring BodyMax and
// sending nothing must not hold a megabyte per connection.
const bodyPreallocMax = 16 << 10

// readBody reads a request's body, at most BodyMax bytes. A body of known
// length up to bodyPreallocMax (the usual reservation) is read into one
// buffer of that size: net/http's reader ends it there, and answers
// io.ErrUnexpectedEOF when it is shorter. Otherwise (larger, or chunked) it
// is read as it comes up to BodyMax, and past it the answer is a
// *http.MaxBytesError.
func readBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= bodyPreallocMax {
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(http.MaxBytesReader(nil, r.Body, BodyMax))
}

func tooLarge() *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge, Message: fmt.Sprintf("the body exceeds %d bytes", BodyMax)}
}

// readyz answers whether the database is reachable and its schema current.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if info, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		info.route = "readyz"
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	version, err := s.store.Ready(ctx)
	if errors.Is(err, ErrSchemaNotCurrent) {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: CodeSchemaNotCurrent, Message: err.Error(), RetryAfter: 5})
		return
	}
	if err != nil {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "the database is unreachable", RetryAfter: 1})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "schema_version": version})
}
