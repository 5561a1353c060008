package outagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// proxy is a TCP proxy to the database that the test can cut: existing
// connections are closed and new ones are refused until restore.
type proxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func newProxy(t *testing.T, upstream string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, upstream: upstream}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.accept()
	return p
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

type env struct {
	t    *testing.T
	hc   *postgres.Client
	url  string
	keys map[string]string
	http *http.Client
}

// start serves the API over a pool to dbURL (or, with via, through the proxy).
func start(t *testing.T, db *pgtest.Database, via *proxy, cfg httpapi.Config) *env {
	t.Helper()
	pc, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if via != nil {
		host, port, _ := net.SplitHostPort(via.ln.Addr().String())
		pc.ConnConfig.Host = host
		fmt.Sscan(port, &pc.ConnConfig.Port)
	}
	pc.MaxConns = 8
	pc.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Engine, cfg.Store = hc, pgstore.Service(pool)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.RequestTimeout = 5 * time.Second
	srv, err := httpapi.New(cfg)
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
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	e := &env{t: t, hc: hc, url: "http://" + ln.Addr().String(), keys: map[string]string{}, http: &http.Client{Timeout: 30 * time.Second}}
	for name, shop := range map[string]int64{"shop1": 1, "admin": 0} {
		key, _, err := httpapi.CreateKey(context.Background(), pgstore.Service(db.Pool), shop, shop == 0)
		if err != nil {
			t.Fatal(err)
		}
		e.keys[name] = key
	}
	return e
}

type result struct {
	status     int
	code       string
	retryAfter string
	// hold is the status of a hold answer ("held", ...), checkout its id.
	hold     string
	checkout string
}

func (e *env) send(method, path, key, body string) (result, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+e.keys[key])
	}
	res, err := e.http.Do(req)
	if err != nil {
		return result{}, err
	}
	defer res.Body.Close()
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
		Status     string `json:"status"`
		CheckoutID string `json:"checkout_id"`
	}
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &b); err != nil {
		return result{}, fmt.Errorf("%d: not JSON: %q", res.StatusCode, raw)
	}
	return result{status: res.StatusCode, code: b.Error.Code, retryAfter: res.Header.Get("Retry-After"),
		hold: b.Status, checkout: b.CheckoutID}, nil
}

func (e *env) must(method, path, key, body string) result {
	e.t.Helper()
	r, err := e.send(method, path, key, body)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

func reserveBody(id uuid.UUID, qty int) string {
	return fmt.Sprintf(`{"checkout_id":%q,"lines":[{"item_id":7,"location_id":1,"quantity":%d}]}`, id, qty)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func checkInvariant(t *testing.T, db *pgtest.Database) {
	t.Helper()
	hc, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := hc.CheckInvariant(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("invariant: %v %v", rep, err)
	}
}

// TestDatabaseCut: with the network path to the database severed, every
// route answers 503 with a code and Retry-After (never a hang, never a 500),
// /readyz fails, and the service recovers by itself when the path returns.
func TestDatabaseCut(t *testing.T) {
	db := pgtest.DB(t, 0)
	upstream := strings.TrimPrefix(db.Pool.Config().ConnConfig.Host, "")
	upstream = net.JoinHostPort(upstream, fmt.Sprint(db.Pool.Config().ConnConfig.Port))
	p := newProxy(t, upstream)
	e := start(t, db, p, httpapi.Config{KeyCacheTTL: time.Hour})
	if r := e.must("PUT", "/v1/shops/1/inventory/7/1", "shop1", `{"available":10,"reason":"stock"}`); r.status != 200 {
		t.Fatalf("stock: %+v", r)
	}
	held := uuid.New()
	if r := e.must("POST", "/v1/shops/1/reservations", "shop1", reserveBody(held, 1)); r.status != 201 {
		t.Fatalf("reserve: %+v", r)
	}

	p.cut()
	for _, c := range []struct{ method, path, key, body string }{
		{"POST", "/v1/shops/1/reservations", "shop1", reserveBody(uuid.New(), 1)},
		{"POST", "/v1/shops/1/reservations/" + held.String() + "/claim", "shop1", ""},
		{"GET", "/v1/shops/1/reservations/" + held.String(), "shop1", ""},
		{"GET", "/v1/shops/1/inventory/7/1", "shop1", ""},
		{"GET", "/v1/shops/1/inventory/7/1", "admin", ""}, // an uncached key: the lookup fails
		{"GET", "/readyz", "", ""},
	} {
		r := e.must(c.method, c.path, c.key, c.body)
		if r.status != 503 || r.code != "unavailable" || r.retryAfter == "" {
			t.Errorf("%s %s with the database cut: %+v, want 503 unavailable with Retry-After", c.method, c.path, r)
		}
	}
	if r := e.must("GET", "/healthz", "", ""); r.status != 200 {
		t.Errorf("healthz with the database cut: %+v", r)
	}

	p.restore()
	waitFor(t, "recovery", func() bool {
		r, err := e.send("GET", "/readyz", "", "")
		return err == nil && r.status == 200
	})
	if r := e.must("POST", "/v1/shops/1/reservations/"+held.String()+"/claim", "shop1", ""); r.status != 200 {
		t.Fatalf("claim after recovery: %+v", r)
	}
	if r := e.must("POST", "/v1/shops/1/reservations", "shop1", reserveBody(uuid.New(), 1)); r.status != 201 {
		t.Fatalf("reserve after recovery: %+v", r)
	}
	checkInvariant(t, db)
}

// TestClusterRestart: the database restarts under load. Every answer is a
// hold (201, or 200 when the engine's retry after a lost COMMIT answer found
// its own first attempt's hold) or a 503 with a code (never a 500 or a hang), the service recovers
// by itself, and every reservation it confirmed is there afterwards.
func TestClusterRestart(t *testing.T) {
	cl := pgtest.Cluster()
	if cl == nil {
		t.Skip("TEST_DATABASE_URL is set: no private cluster to restart")
	}
	db := pgtest.DB(t, 0)
	e := start(t, db, nil, httpapi.Config{KeyCacheTTL: time.Hour})
	if r := e.must("PUT", "/v1/shops/1/inventory/7/1", "shop1", `{"available":100000,"reason":"stock"}`); r.status != 200 {
		t.Fatalf("stock: %+v", r)
	}

	var mu sync.Mutex
	var confirmed []uuid.UUID
	counts := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := uuid.New()
				r, err := e.send("POST", "/v1/shops/1/reservations", "shop1", reserveBody(id, 1))
				mu.Lock()
				switch {
				case err != nil:
					t.Errorf("request failed: %v", err)
				case r.status == 201 && r.hold == "held" && r.checkout == id.String():
					confirmed = append(confirmed, id)
				case r.status == 200 && r.hold == "held" && r.checkout == id.String():
					// A replay: the engine lost the answer to its first
					// attempt's COMMIT, retried with the same checkout id and
					// found the hold that attempt made. Truthful: it is held.
					confirmed = append(confirmed, id)
				case r.status == 503 && (r.code == "unavailable" || r.code == "overloaded") && r.retryAfter != "":
				default:
					t.Errorf("answer during restart: %+v", r)
				}
				counts[fmt.Sprintf("%d %s", r.status, r.code)]++
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	waitFor(t, "load", func() bool { mu.Lock(); defer mu.Unlock(); return len(confirmed) >= 20 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.Restart(ctx, "fast"); err != nil {
		t.Fatalf("restart: %v", err)
	}
	mu.Lock()
	n := len(confirmed)
	mu.Unlock()
	waitFor(t, "reservations after the restart", func() bool { mu.Lock(); defer mu.Unlock(); return len(confirmed) >= n+20 })
	close(stop)
	wg.Wait()
	t.Logf("answers: %v", counts)

	hc, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range confirmed {
		if h, err := hc.Hold(context.Background(), 1, id); err != nil || h.Status != holdfast.StatusHeld {
			t.Fatalf("confirmed reservation %s: %+v %v", id, h, err)
		}
	}
	checkInvariant(t, db)
}
