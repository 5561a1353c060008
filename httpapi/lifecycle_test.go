package httpapi_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
)

// blockReservations takes a lock that makes every reservation's insert wait
// until the returned func releases it: on PostgreSQL an exclusive lock on
// holds, on MariaDB LOCK TABLES holds WRITE on a connection of its own.
func (e *env) blockReservations() func() {
	e.t.Helper()
	ctx := context.Background()
	var unlock func()
	if e.my != nil {
		conn, err := e.my.DB.Conn(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "LOCK TABLES holds WRITE"); err != nil {
			conn.Close()
			e.t.Fatal(err)
		}
		unlock = func() {
			_, _ = conn.ExecContext(ctx, "UNLOCK TABLES")
			conn.Close()
		}
	} else {
		tx, err := e.db.Pool.Begin(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE holds IN EXCLUSIVE MODE"); err != nil {
			e.t.Fatal(err)
		}
		unlock = func() { _ = tx.Rollback(ctx) }
	}
	var done bool
	release := func() {
		if !done {
			done = true
			unlock()
		}
	}
	e.t.Cleanup(release)
	return release
}

// waitingReservations counts reservations waiting on that lock (on
// MariaDB: reservations in a statement, which while it is held are all
// waiting).
func (e *env) waitingReservations() int {
	var n int
	if e.my != nil {
		// The first waits for the table; the others, which took the key's
		// counter row before inserting their hold, wait for that row.
		err := e.my.DB.QueryRowContext(context.Background(), `SELECT count(*) FROM information_schema.PROCESSLIST
			WHERE DB = ? AND COMMAND = 'Query' AND INFO LIKE '%route=''reserve''%'`, e.my.Name).Scan(&n)
		if err != nil {
			e.t.Fatal(err)
		}
		return n
	}
	err := e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = $1 AND wait_event_type = 'Lock' AND query LIKE '%route=''reserve''%'`, e.db.Name).Scan(&n)
	if err != nil && err != pgx.ErrNoRows {
		e.t.Fatal(err)
	}
	return n
}

// TestOverload: a request that cannot get a connection slot within its
// own deadline gets 503 overloaded with Retry-After; while it waits, other
// shops' requests are served in turn.
func TestOverload(t *testing.T) { t.Parallel(); engines(t, testOverload) }

func testOverload(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{
		engine: holdfast.Config{LockTimeout: time.Minute, StatementTimeout: time.Minute},
		server: httpapi.Config{MaxInFlight: 1, RequestTimeout: time.Minute, KeyCacheTTL: time.Hour},
	})
	e.stock(1, 7, 5)
	e.stock(1, 8, 5)
	e.expect(req{method: "GET", path: "/v1/shops/2/inventory/7/1", key: "shop2"}, 200, "")
	unblock := e.blockReservations()
	results := make(chan *resp, 1)
	go func() {
		// Two lines: not combinable, so it holds the only slot.
		r, _ := e.try(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(7, 1)+","+line(8, 1), "")})
		results <- r
	}()
	waitFor(t, "one blocked reservation", func() bool { return e.waitingReservations() == 1 })

	short := map[string]string{"X-Request-Timeout": "50ms"}
	r := e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1", key: "shop1", header: short}, 503, "overloaded")
	if r.header.Get("Retry-After") == "" || r.errMember("request_id") != r.header.Get("X-Request-Id") {
		t.Fatalf("503 without Retry-After or request id: %s %v", r.body, r.header)
	}
	e.expect(req{method: "GET", path: "/v1/shops/2/inventory/7/1", key: "shop2", header: short}, 503, "overloaded")
	e.expect(req{method: "GET", path: "/v1/shops/2/inventory/7/1", key: "shop2", header: map[string]string{"X-Request-Timeout": "soon"}}, 400, "wrong_type")

	// A request with time to wait is served once the slot frees.
	waiting := make(chan *resp, 1)
	go func() {
		r, _ := e.try(req{method: "GET", path: "/v1/shops/2/inventory/7/1", key: "shop2"})
		waiting <- r
	}()
	waitFor(t, "a queued request", func() bool {
		r := e.do(req{method: "GET", path: "/metrics", key: "admin"})
		return strings.Contains(string(r.body), "holdfast_http_admission_waiting 1\n")
	})
	unblock()
	if r := <-results; r == nil || r.status != 201 {
		t.Fatalf("blocked reservation: %+v", r)
	}
	if r := <-waiting; r == nil || r.status != 200 {
		t.Fatalf("queued request: %+v", r)
	}
	r = e.expect(req{method: "GET", path: "/metrics", key: "admin"}, 200, "")
	if !strings.Contains(string(r.body), `holdfast_http_requests_total{outcome="overloaded",route="get_inventory",status="503"} 2`) {
		t.Fatalf("overload not counted:\n%s", r.body)
	}
}

// TestGracefulShutdown: requests in flight when shutdown starts all
// complete; new connections are refused; nothing is half-applied.
func TestGracefulShutdown(t *testing.T) { t.Parallel(); engines(t, testGracefulShutdown) }

func testGracefulShutdown(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{
		engine: holdfast.Config{LockTimeout: time.Minute, StatementTimeout: time.Minute},
		server: httpapi.Config{RequestTimeout: time.Minute},
	})
	e.stock(1, 7, 100)
	e.stock(1, 8, 100)
	unblock := e.blockReservations()
	const n = 8
	ids := make([]uuid.UUID, n)
	results := make(chan *resp, n)
	for i := range ids {
		ids[i] = uuid.New()
		go func() {
			// Two lines: each request is its own transaction (one line
			// would be combined into one).
			r, err := e.try(req{method: "POST", path: res1, key: "shop1", body: reserveBody(ids[i], line(7, 2)+","+line(8, 1), "")})
			if err != nil {
				t.Errorf("in-flight request lost: %v", err)
			}
			results <- r
		}()
	}
	waitFor(t, "blocked reservations", func() bool { return e.waitingReservations() == n })

	stopped := make(chan error, 1)
	go func() { stopped <- e.stop() }()
	addr := strings.TrimPrefix(e.url, "http://")
	waitFor(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-stopped:
		t.Fatalf("shutdown finished with %d requests in flight: %v", n, err)
	default:
	}

	unblock()
	for range n {
		if r := <-results; r == nil || r.status != 201 {
			t.Fatalf("in-flight reservation: %+v", r)
		}
	}
	if err := <-stopped; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	ctx := context.Background()
	for _, id := range ids {
		if h, err := e.eng.Hold(ctx, 1, id); err != nil || h.Status != holdfast.StatusHeld {
			t.Fatalf("hold %s after shutdown: %+v %v", id, h, err)
		}
	}
	if l, err := e.eng.Level(ctx, holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}); err != nil || l.Held != 2*n {
		t.Fatalf("level after shutdown: %+v %v", l, err)
	}
}
