package httpapi_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestAnswersSayWhatHappened: error bodies carry the request id; messages
// name what is missing; a stock change whose deadline passes while it may
// be committing is outcome_unknown (not the retryable 503).
func TestAnswersSayWhatHappened(t *testing.T) { t.Parallel(); engines(t, testAnswersSayWhatHappened) }

func testAnswersSayWhatHappened(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 5)
	id := uuid.New()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 1), "")}, 201, "")
	hold := res1 + "/" + id.String()

	r := e.expect(req{method: "POST", path: hold + "/extend", key: "shop1", contentType: "-"}, 400, "missing_field")
	if r.errField() != "ttl_seconds" || !strings.Contains(r.errMember("message"), "ttl_seconds") {
		t.Fatalf("extend without a body: %s", r.body)
	}
	if r.errMember("request_id") == "" || r.errMember("request_id") != r.header.Get("X-Request-Id") {
		t.Fatalf("request id: body %q header %q", r.errMember("request_id"), r.header.Get("X-Request-Id"))
	}
	r = e.expect(req{method: "POST", path: hold + "/claim", key: "shop1", body: `{"foo":1}`}, 400, "unknown_field")
	if msg := r.errMember("message"); !strings.Contains(msg, `"foo"`) || strings.HasSuffix(strings.TrimSpace(msg), "allowed:") {
		t.Fatalf("unknown member on claim: %q", msg)
	}
	r = e.expect(req{method: "POST", path: res1, key: "shop1", body: `{"checkout_id":"` + id.String() + `","lines":[],"foo":1}`}, 400, "unknown_field")
	if msg := r.errMember("message"); !strings.Contains(msg, "allowed: checkout_id, lines, ttl_seconds") {
		t.Fatalf("unknown member on reserve: %q", msg)
	}

	// A stock change blocked on the key's row until its deadline: it may
	// have been about to commit, so the answer is outcome_unknown.
	unlock := e.lockLevels()
	r = e.expect(req{method: "PUT", path: "/v1/shops/1/inventory/7/1", key: "shop1", body: `{"available":9,"reason":"count"}`,
		header: map[string]string{"X-Request-Timeout": "300ms"}}, 500, "outcome_unknown")
	if r.header.Get("Retry-After") != "" {
		t.Fatalf("outcome_unknown with Retry-After: %v", r.header)
	}
	unlock()
	if r := e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1", key: "shop1"}, 200, ""); r.json["available"] != 5.0 {
		t.Fatalf("level after an unacknowledged change that was never committed: %s", r.body)
	}
}

// TestStockIdempotencyKey: a stock change with an Idempotency-Key (or
// adjustment_id) applies once, however often it is retried.
func TestStockIdempotencyKey(t *testing.T) { t.Parallel(); engines(t, testStockIdempotencyKey) }

func testStockIdempotencyKey(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 5)
	adj := req{method: "POST", path: "/v1/shops/1/inventory/7/1/adjust", key: "shop1", body: `{"delta":3,"reason":"restock"}`,
		header: map[string]string{"Idempotency-Key": "po-4711"}}
	first := e.do(adj)
	if first.status == 422 && first.errField() == "adjustment_id" && strings.Contains(first.errMember("message"), "not supported") {
		t.Skip("the engine on this branch does not support idempotent stock changes yet: " + first.errMember("message"))
	}
	if first.status != 200 || first.json["available"] != 8.0 {
		t.Fatalf("first adjust: %d %s", first.status, first.body)
	}
	for range 3 {
		if r := e.do(adj); r.status != 200 || r.json["available"] != 8.0 {
			t.Fatalf("retried adjust: %d %s", r.status, r.body)
		}
	}
	body := req{method: "POST", path: "/v1/shops/1/inventory/7/1/adjust", key: "shop1", body: `{"delta":3,"reason":"restock","adjustment_id":"po-4711"}`}
	if r := e.do(body); r.status != 200 || r.json["available"] != 8.0 {
		t.Fatalf("same id in the body: %d %s", r.status, r.body)
	}
	e.expect(req{method: "POST", path: "/v1/shops/1/inventory/7/1/adjust", key: "shop1", body: `{"delta":4,"reason":"restock","adjustment_id":"po-4711"}`}, 409, "idempotency_conflict")
	adj.body = `{"delta":3,"reason":"restock","adjustment_id":"other"}`
	e.expect(adj, 422, "invalid_argument")
	if r := e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1", key: "shop1"}, 200, ""); r.json["available"] != 8.0 {
		t.Fatalf("level: %s", r.body)
	}
}

// TestNotStockedAnswer: a reservation of a key that never had stock set
// answers 409 not_stocked naming the key, not a sell-out; a sold-out key
// still answers insufficient_stock.
func TestNotStockedAnswer(t *testing.T) { t.Parallel(); engines(t, testNotStockedAnswer) }

func testNotStockedAnswer(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 0)
	r := e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(77, 1), "")}, 409, "not_stocked")
	if msg := r.errMember("message"); !strings.Contains(msg, "no stock has been set for item 77 at location 1") {
		t.Fatalf("not_stocked message: %q", msg)
	}
	if l := r.json["error"].(map[string]any)["lines"].([]any)[0].(map[string]any); l["not_stocked"] != true || l["sellable"] != 0.0 {
		t.Fatalf("not_stocked line: %s", r.body)
	}
	r = e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(7, 1), "")}, 409, "insufficient_stock")
	if strings.Contains(string(r.body), "not_stocked") {
		t.Fatalf("a sold-out key answered as never stocked: %s", r.body)
	}
}
