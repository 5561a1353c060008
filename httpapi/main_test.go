package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/metrics"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqlstore"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The internal tests reach PostgreSQL's store through this (export_test.go).
func init() {
	httpapi.PostgresStoreForTest = func(pool *pgxpool.Pool) httpapi.Store { return pgstore.Service(pool) }
}

func TestMain(m *testing.M) {
	// Fuzz workers run only FuzzDecodeReserve, which needs no database.
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.fuzzworker") {
			os.Exit(m.Run())
		}
	}
	if os.Getenv(floodURLEnv) != "" { // the flood's own process (flood_test.go)
		os.Exit(m.Run())
	}
	// PostgreSQL and a private MariaDB: the core tests run on both engines
	// (engines_test.go).
	os.Exit(pgtest.Run(mysqltest.Runner(m)))
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// env is a real server on a free port over a fresh database.
type env struct {
	t     *testing.T
	db    *pgtest.Database    // nil on MariaDB
	hc    *postgres.Client    // nil on MariaDB
	my    *mysqltest.Database // nil on PostgreSQL
	name  string              // enginePostgres or engineMariaDB
	eng   holdfast.Engine
	store httpapi.Store
	srv   *httpapi.Server
	clock *pgtest.Clock
	url   string
	logs  *syncBuffer
	stop  func() error // graceful shutdown; returns Serve's result
	keys  map[string]string
	http  *http.Client
}

type envOpts struct {
	engine   holdfast.Config
	server   httpapi.Config
	maxConns int
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	return newEnvOn(t, enginePostgres, o)
}

// newEnvOn is newEnv on the named engine (enginePostgres, engineMariaDB).
func newEnvOn(t *testing.T, engine string, o envOpts) *env {
	t.Helper()
	clock := pgtest.NewClock(time.Time{})
	o.engine.Now = clock.Now
	eng := metrics.NewEngine()
	o.engine.Observer = eng
	e := &env{t: t, name: engine, clock: clock}
	switch engine {
	case enginePostgres:
		e.db = pgtest.DB(t, o.maxConns)
		hc, err := postgres.New(e.db.Pool, o.engine)
		if err != nil {
			t.Fatal(err)
		}
		e.hc, e.eng, e.store = hc, hc, pgstore.Service(e.db.Pool)
		o.server.Engine, o.server.Store = hc, e.store
	case engineMariaDB:
		e.my = mysqltest.DB(t, o.maxConns)
		mc, err := mysql.New(e.my.DB, o.engine)
		if err != nil {
			t.Fatal(err)
		}
		e.eng, e.store = mc, mysqlstore.Service(e.my.DB)
		o.server.Engine, o.server.Store, o.server.Strategies = mc, e.store, mysql.Strategies()
	default:
		t.Fatalf("unknown engine %q", engine)
	}
	logs := &syncBuffer{}
	o.server.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	o.server.Collectors = append(o.server.Collectors, eng)
	if o.server.KeyCacheTTL == 0 {
		o.server.KeyCacheTTL = -1 // revocations take effect at once
	}
	if o.server.RefusalDelay == 0 {
		o.server.RefusalDelay = -1 // bad keys answered at once (flood_test.go holds them)
	}
	srv, err := httpapi.New(o.server)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() { cancel(); serveErr = <-done })
		return serveErr
	}
	e.srv, e.url, e.logs, e.stop = srv, "http://"+ln.Addr().String(), logs, stop
	e.keys, e.http = map[string]string{}, &http.Client{Timeout: 30 * time.Second}
	for name, shop := range map[string]int64{"shop1": 1, "shop2": 2, "admin": 0} {
		key, _, err := httpapi.CreateKeyWith(context.Background(), e.store, httpapi.KeySpec{ShopID: shop, Admin: shop == 0})
		if err != nil {
			t.Fatal(err)
		}
		e.keys[name] = key
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
		e.checkInvariant()
		for _, k := range e.keys {
			if strings.Contains(logs.String(), k) {
				t.Errorf("an API key appears in the logs")
			}
		}
	})
	return e
}

func (e *env) checkInvariant() {
	e.t.Helper()
	rep, err := e.eng.CheckInvariant(context.Background())
	if err != nil {
		e.t.Fatalf("invariant check: %v", err)
	}
	if !rep.OK() {
		e.t.Fatalf("invariant broken: %s", rep)
	}
}

// resp is a response as the tests see it.
type resp struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

// errCode and errField read an error body.
func (r *resp) errCode() string  { return r.errMember("code") }
func (r *resp) errField() string { return r.errMember("field") }
func (r *resp) errMember(name string) string {
	e, _ := r.json["error"].(map[string]any)
	s, _ := e[name].(string)
	return s
}

// req describes a request; the zero value of each field is the usual one.
type req struct {
	method, path string
	key          string // a name in env.keys, "-" for none, or a literal key
	body         string
	contentType  string // defaults to application/json when body is set; "-" for none
	header       map[string]string
}

// do sends r, validates the response against the OpenAPI document, and
// returns it.
func (e *env) do(r req) *resp {
	e.t.Helper()
	res, err := e.try(r)
	if err != nil {
		e.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	return res
}

func (e *env) try(r req) (*resp, error) {
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, e.url+r.path, body)
	if err != nil {
		return nil, err
	}
	switch {
	case r.contentType == "-":
	case r.contentType != "":
		hr.Header.Set("Content-Type", r.contentType)
	case r.body != "":
		hr.Header.Set("Content-Type", "application/json")
	}
	switch k, ok := e.keys[r.key]; {
	case r.key == "-":
	case ok:
		hr.Header.Set("Authorization", "Bearer "+k)
	case r.key == "":
		hr.Header.Set("Authorization", "Bearer "+e.keys["admin"])
	default:
		hr.Header.Set("Authorization", "Bearer "+r.key)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	hres, err := e.http.Do(hr)
	if err != nil {
		return nil, err
	}
	defer hres.Body.Close()
	b, err := io.ReadAll(hres.Body)
	if err != nil {
		return nil, err
	}
	out := &resp{status: hres.StatusCode, header: hres.Header, body: b}
	if strings.HasPrefix(hres.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &out.json); err != nil {
			return nil, errors.New("response is not a JSON object: " + string(b))
		}
	}
	if err := checkResponse(r.method, r.path, hres.StatusCode, hres.Header.Get("Content-Type"), b); err != nil {
		return nil, errors.New("OpenAPI: " + err.Error())
	}
	if hres.StatusCode < 300 {
		if err := checkRequest(r.method, r.path, []byte(r.body)); err != nil {
			return nil, errors.New("OpenAPI: " + err.Error())
		}
	}
	if hres.Header.Get("X-Request-Id") == "" {
		return nil, errors.New("no X-Request-Id in the response")
	}
	return out, nil
}

// expect fails unless the response has the status and (for errors) code.
func (e *env) expect(r req, status int, code string) *resp {
	e.t.Helper()
	res := e.do(r)
	if res.status != status || res.errCode() != code {
		e.t.Fatalf("%s %s %s: got %d %s, want %d %q", r.method, r.path, r.body, res.status, res.body, status, code)
	}
	return res
}

// stock sets a key's available stock through the engine.
func (e *env) stock(shop, item int64, n int) {
	e.t.Helper()
	if _, err := e.eng.ChangeStock(context.Background(), holdfast.StockChange{Key: holdfast.Key{ShopID: shop, ItemID: item, LocationID: 1}, Set: &n, Reason: "test"}); err != nil {
		e.t.Fatal(err)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
