package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

func reserveBody(id uuid.UUID, lines string, extra string) string {
	return fmt.Sprintf(`{"checkout_id":%q,"lines":[%s]%s}`, id, lines, extra)
}

func line(item int64, qty int) string {
	return fmt.Sprintf(`{"item_id":%d,"location_id":1,"quantity":%d}`, item, qty)
}

const res1 = "/v1/shops/1/reservations"

// TestRoutes walks every route through every status it documents.
func TestRoutes(t *testing.T) { t.Parallel(); engines(t, testRoutes) }

func testRoutes(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{engine: holdfast.Config{HoldLifetimeMax: 30 * time.Minute}})
	k := "shop1"

	// Inventory.
	e.expect(req{method: "PUT", path: "/v1/shops/1/inventory/7/1", key: k, body: `{"available":5,"reason":"stocktake","reference":"count-1"}`}, 200, "")
	r := e.expect(req{method: "POST", path: "/v1/shops/1/inventory/7/1/adjust", key: k, body: `{"delta":2,"reason":"restock"}`}, 200, "")
	if r.json["available"] != 7.0 || r.json["sellable"] != 7.0 {
		t.Fatalf("level after adjust: %s", r.body)
	}
	e.expect(req{method: "POST", path: "/v1/shops/1/inventory/7/1/adjust", key: k, body: `{"delta":-8,"reason":"shrink"}`}, 422, "invalid_argument")
	e.expect(req{method: "POST", path: "/v1/shops/1/inventory/7/1/adjust", key: k, body: `{"delta":-2,"reason":"shrink"}`}, 200, "")
	r = e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1", key: k}, 200, "")
	if r.json["available"] != 5.0 || r.json["held"] != 0.0 {
		t.Fatalf("level: %s", r.body)
	}
	e.expect(req{method: "GET", path: "/v1/shops/1/inventory/999/1", key: k}, 200, "")

	// Reserve: created, replayed, conflict, short.
	id := uuid.New()
	r = e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(id, line(7, 2), `,"ttl_seconds":60`)}, 201, "")
	if r.json["status"] != "held" || r.json["checkout_id"] != id.String() {
		t.Fatalf("reserve: %s", r.body)
	}
	expires, _ := time.Parse(time.RFC3339Nano, r.json["expires_at"].(string))
	if d := expires.Sub(e.clock.Now()); d != time.Minute {
		t.Fatalf("expires_at %v is %v after now, want 1m", expires, d)
	}
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(id, line(7, 2), `,"ttl_seconds":60`)}, 200, "")
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(id, line(7, 3), "")}, 409, "idempotency_conflict")
	r = e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(7, 4)+","+line(8, 1), "")}, 409, "insufficient_stock")
	lines := r.json["error"].(map[string]any)["lines"].([]any)
	if len(lines) != 2 || fmt.Sprint(lines[0]) != "map[item_id:7 location_id:1 requested:4 sellable:3]" ||
		fmt.Sprint(lines[1]) != "map[item_id:8 location_id:1 not_stocked:true requested:1 sellable:0]" {
		t.Fatalf("shortfall lines: %s", r.body)
	}

	// Read, extend.
	e.expect(req{method: "GET", path: res1 + "/" + id.String(), key: k}, 200, "")
	e.expect(req{method: "GET", path: res1 + "/" + uuid.NewString(), key: k}, 404, "not_found")
	r = e.expect(req{method: "POST", path: res1 + "/" + id.String() + "/extend", key: k, body: `{"ttl_seconds":600}`}, 200, "")
	if expires2, _ := time.Parse(time.RFC3339Nano, r.json["expires_at"].(string)); expires2.Sub(e.clock.Now()) != 10*time.Minute {
		t.Fatalf("extend: %s", r.body)
	}
	e.clock.Advance(25 * time.Minute)
	e.expect(req{method: "POST", path: res1 + "/" + id.String() + "/extend", key: k, body: `{"ttl_seconds":600}`}, 409, "lifetime_exceeded")
	e.expect(req{method: "POST", path: res1 + "/" + uuid.NewString() + "/extend", key: k, body: `{"ttl_seconds":60}`}, 404, "not_found")

	// Claim, then everything a claimed checkout answers.
	r = e.expect(req{method: "POST", path: res1 + "/" + id.String() + "/claim", key: k}, 200, "")
	if r.json["status"] != "claimed" || r.json["ended_at"] == nil {
		t.Fatalf("claim: %s", r.body)
	}
	e.expect(req{method: "POST", path: res1 + "/" + id.String() + "/claim", key: k, body: `{}`}, 200, "")
	e.expect(req{method: "POST", path: res1 + "/" + id.String() + "/release", key: k}, 409, "hold_claimed")
	e.expect(req{method: "POST", path: res1 + "/" + id.String() + "/extend", key: k, body: `{"ttl_seconds":60}`}, 409, "hold_claimed")
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(id, line(7, 2), `,"ttl_seconds":60`)}, 409, "hold_claimed")
	e.expect(req{method: "POST", path: res1 + "/" + uuid.NewString() + "/claim", key: k}, 404, "not_found")
	if r := e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1", key: k}, 200, ""); r.json["available"] != 3.0 {
		t.Fatalf("available after claim: %s", r.body)
	}

	// Release, then everything a released checkout answers.
	id2 := uuid.New()
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(id2, line(7, 1), "")}, 201, "")
	r = e.expect(req{method: "POST", path: res1 + "/" + id2.String() + "/release", key: k}, 200, "")
	if r.json["status"] != "released" {
		t.Fatalf("release: %s", r.body)
	}
	e.expect(req{method: "POST", path: res1 + "/" + id2.String() + "/release", key: k}, 200, "")
	e.expect(req{method: "POST", path: res1 + "/" + id2.String() + "/claim", key: k}, 409, "hold_released")
	e.expect(req{method: "POST", path: res1 + "/" + id2.String() + "/extend", key: k, body: `{"ttl_seconds":60}`}, 409, "hold_released")
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(id2, line(7, 1), "")}, 409, "hold_released")
	e.expect(req{method: "POST", path: res1 + "/" + uuid.NewString() + "/release", key: k}, 404, "not_found")

	// Expiry: a swept hold whose stock went to someone else is 410 on
	// claim with the shortfall; release answers 200 with status expired.
	e.stock(1, 9, 1)
	id3 := uuid.New()
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(id3, line(9, 1), `,"ttl_seconds":60`)}, 201, "")
	e.clock.Advance(2 * time.Minute)
	if n, err := e.eng.SweepOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(9, 1), "")}, 201, "")
	e.expect(req{method: "POST", path: res1 + "/" + id3.String() + "/extend", key: k, body: `{"ttl_seconds":60}`}, 410, "hold_expired")
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(id3, line(9, 1), `,"ttl_seconds":60`)}, 410, "hold_expired")
	r = e.expect(req{method: "POST", path: res1 + "/" + id3.String() + "/claim", key: k}, 410, "hold_expired")
	if lines := r.json["error"].(map[string]any)["lines"].([]any); len(lines) != 1 || fmt.Sprint(lines[0]) != "map[item_id:9 location_id:1 requested:1 sellable:0]" {
		t.Fatalf("expired claim: %s", r.body)
	}
	if r := e.expect(req{method: "POST", path: res1 + "/" + id3.String() + "/release", key: k}, 200, ""); r.json["status"] != "expired" {
		t.Fatalf("release of an expired hold: %s", r.body)
	}

	// Over-committed: stock cut below the holds.
	e.stock(1, 10, 5)
	id4 := uuid.New()
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(id4, line(10, 3), "")}, 201, "")
	e.expect(req{method: "PUT", path: "/v1/shops/1/inventory/10/1", key: k, body: `{"available":1,"reason":"damaged"}`}, 200, "")
	e.expect(req{method: "POST", path: res1 + "/" + id4.String() + "/claim", key: k}, 409, "over_committed")
	e.expect(req{method: "POST", path: res1 + "/" + id4.String() + "/release", key: k}, 200, "")

	// Operational routes, no key needed; /metrics on the API's listener
	// needs an admin key.
	e.expect(req{method: "GET", path: "/healthz", key: "-"}, 200, "")
	if r := e.expect(req{method: "GET", path: "/readyz", key: "-"}, 200, ""); r.json["status"] != "ready" {
		t.Fatalf("readyz: %s", r.body)
	}
	e.expect(req{method: "GET", path: "/openapi.json", key: "-"}, 200, "")
	e.expect(req{method: "GET", path: "/metrics", key: "-"}, 401, "unauthorized")
	e.expect(req{method: "GET", path: "/metrics", key: k}, 403, "forbidden")
	r = e.expect(req{method: "GET", path: "/metrics", key: "admin"}, 200, "")
	for _, want := range []string{
		`holdfast_http_requests_total{outcome="insufficient_stock",route="reserve",status="409"} 1`,
		`holdfast_http_request_duration_seconds_bucket{outcome="ok",route="reserve"`,
		`holdfast_engine_op_duration_seconds_count{op="reserve",outcome="held"}`,
		`holdfast_engine_op_duration_seconds_count{op="reserve",outcome="replayed"} 1`,
		`holdfast_holds_expired_total 1`,
		`holdfast_db_pool_max_conns{pool="api"}`,
		`holdfast_http_in_flight_requests`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Unknown routes and methods.
	e.expect(req{method: "GET", path: "/v1/nothing", key: k}, 404, "route_not_found")
	e.expect(req{method: "GET", path: "/", key: "-"}, 404, "route_not_found")
	r = e.expect(req{method: "DELETE", path: res1 + "/" + id.String(), key: k}, 405, "method_not_allowed")
	if r.header.Get("Allow") == "" {
		t.Fatalf("405 without Allow")
	}
	e.expect(req{method: "GET", path: res1, key: k}, 405, "method_not_allowed")
	e.expect(req{method: "POST", path: "/healthz", key: "-"}, 405, "method_not_allowed")
}

// TestRequestLog checks the one log line per request: route, shop, status,
// latency and the request id, honoured or generated.
func TestRequestLog(t *testing.T) { t.Parallel(); engines(t, testRequestLog) }

func testRequestLog(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	r := e.do(req{method: "GET", path: "/v1/shops/1/inventory/1/1", key: "shop1", header: map[string]string{"X-Request-Id": "abc-123"}})
	if r.header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("request id not honoured: %q", r.header.Get("X-Request-Id"))
	}
	r = e.do(req{method: "GET", path: "/v1/shops/1/inventory/1/1", key: "shop1", header: map[string]string{"X-Request-Id": "bad id with spaces"}})
	gen := r.header.Get("X-Request-Id")
	if gen == "" || gen == "bad id with spaces" {
		t.Fatalf("bad request id not replaced: %q", gen)
	}
	e.stop()
	logs := e.logs.String()
	for _, want := range []string{
		`"request_id":"abc-123","method":"GET","route":"get_inventory","status":200,"duration_ms":`,
		`"request_id":"` + gen + `"`,
		`"shop":1,"key_id":`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "Bearer") {
		t.Errorf("log holds an Authorization header")
	}
}

var _ = http.StatusOK
