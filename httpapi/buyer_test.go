package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestBuyerLimitRoutes walks the per-buyer limit and safety stock routes
// through every status they document, and the reservation's buyer_id and
// buyer_limit_exceeded answer; rejected input changes nothing.
func TestBuyerLimitRoutes(t *testing.T) { t.Parallel(); engines(t, testBuyerLimitRoutes) }

func testBuyerLimitRoutes(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{engine: holdfast.Config{}})
	k := "shop1"
	const inv = "/v1/shops/1/inventory/42/1"
	const lim = "/v1/shops/1/buyer-limits/42"
	e.expect(req{method: "PUT", path: inv, key: k, body: `{"available":10,"reason":"stocktake"}`}, 200, "")

	// Safety stock.
	r := e.expect(req{method: "PUT", path: inv + "/safety", key: k, body: `{"safety":3}`}, 200, "")
	if r.json["safety"] != 3.0 || r.json["sellable"] != 7.0 || r.json["available"] != 10.0 {
		t.Fatalf("set safety: %s", r.body)
	}
	for _, bad := range []struct {
		body   string
		status int
		code   string
		field  string
	}{
		{`{"safety":-1}`, 422, "invalid_argument", "safety"},
		{`{"safety":2147483648}`, 422, "invalid_argument", "safety"},
		{`{"safety":"3"}`, 400, "wrong_type", "safety"},
		{`{}`, 400, "missing_field", "safety"},
		{`{"safety":1,"reason":"x"}`, 400, "unknown_field", "reason"},
	} {
		if r := e.expect(req{method: "PUT", path: inv + "/safety", key: k, body: bad.body}, bad.status, bad.code); r.errField() != bad.field {
			t.Errorf("%s: field %q, want %q", bad.body, r.errField(), bad.field)
		}
	}
	e.expect(req{method: "PUT", path: "/v1/shops/1/inventory/0/1/safety", key: k, body: `{"safety":1}`}, 422, "invalid_argument")
	if r := e.expect(req{method: "GET", path: inv, key: k}, 200, ""); r.json["safety"] != 3.0 || r.json["sellable"] != 7.0 {
		t.Fatalf("level after rejected safety changes: %s", r.body)
	}

	// Buyer limits.
	e.expect(req{method: "GET", path: lim, key: k}, 404, "not_found")
	r = e.expect(req{method: "PUT", path: lim, key: k, body: `{"limit":2,"window_seconds":3600}`}, 200, "")
	if want := `{"shop_id":1,"item_id":42,"limit":2,"window_seconds":3600}`; strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("set limit: %s, want %s", r.body, want)
	}
	for _, bad := range []struct {
		body   string
		status int
		code   string
		field  string
	}{
		{`{"limit":-1}`, 422, "invalid_argument", "limit"},
		{`{"limit":1,"window_seconds":-5}`, 422, "invalid_argument", "window_seconds"},
		{`{"limit":1,"window_seconds":90000}`, 422, "invalid_argument", "window_seconds"}, // past the 24 h retention
		{`{"window_seconds":60}`, 400, "missing_field", "limit"},
		{`{"limit":1.5}`, 400, "wrong_type", "limit"},
		{`{"limit":1,"buyer":"x"}`, 400, "unknown_field", "buyer"},
	} {
		if r := e.expect(req{method: "PUT", path: lim, key: k, body: bad.body}, bad.status, bad.code); r.errField() != bad.field {
			t.Errorf("%s: field %q, want %q", bad.body, r.errField(), bad.field)
		}
	}
	e.expect(req{method: "PUT", path: "/v1/shops/1/buyer-limits/0", key: k, body: `{"limit":1}`}, 422, "invalid_argument")
	if r := e.expect(req{method: "GET", path: lim, key: k}, 200, ""); strings.TrimSpace(string(r.body)) != `{"shop_id":1,"item_id":42,"limit":2,"window_seconds":3600}` {
		t.Fatalf("limit after rejected changes: %s", r.body)
	}

	// Reservations with a buyer id.
	first := uuid.New()
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(first, line(42, 2), `,"buyer_id":"ann@example.com"`)}, 201, "")
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(first, line(42, 2), `,"buyer_id":"ann@example.com"`)}, 200, "") // a retry
	r = e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(42, 1), `,"buyer_id":"ann@example.com"`)}, 409, "buyer_limit_exceeded")
	if got := fmt.Sprint(r.json["error"].(map[string]any)["buyer_limit"]); r.errField() != "buyer_id" || got != "map[held:2 item_id:42 limit:2 requested:1]" {
		t.Fatalf("buyer_limit_exceeded: %s", r.body)
	}
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(42, 2), `,"buyer_id":"bob"`)}, 201, "")
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(42, 1), "")}, 201, "") // no buyer: not limited
	for _, bad := range []struct {
		extra  string
		status int
		code   string
	}{
		{`,"buyer_id":""`, 422, "invalid_argument"},
		{`,"buyer_id":"ann smith"`, 422, "invalid_argument"},
		{`,"buyer_id":"anné"`, 422, "invalid_argument"},
		{`,"buyer_id":"` + strings.Repeat("b", holdfast.BuyerIDMaxLen+1) + `"`, 422, "invalid_argument"},
		{`,"buyer_id":7`, 400, "wrong_type"},
	} {
		if r := e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(42, 1), bad.extra)}, bad.status, bad.code); r.errField() != "buyer_id" {
			t.Errorf("%s: field %q, want buyer_id", bad.extra, r.errField())
		}
	}
	if r := e.expect(req{method: "GET", path: inv, key: k}, 200, ""); r.json["held"] != 5.0 || r.json["sellable"] != 2.0 {
		t.Fatalf("level after rejected reservations: %s", r.body)
	}
	// A release gives the allowance back.
	e.expect(req{method: "POST", path: res1 + "/" + first.String() + "/release", key: k}, 200, "")
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(42, 1), `,"buyer_id":"ann@example.com"`)}, 201, "")

	// Removal.
	r = e.expect(req{method: "DELETE", path: lim, key: k}, 200, "")
	if strings.TrimSpace(string(r.body)) != `{"item_id":42,"removed":true,"shop_id":1}` {
		t.Fatalf("remove: %s", r.body)
	}
	e.expect(req{method: "DELETE", path: lim, key: k}, 200, "")
	e.expect(req{method: "GET", path: lim, key: k}, 404, "not_found")
	e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(42, 2), `,"buyer_id":"ann@example.com"`)}, 201, "")
	// Another shop's key sees nothing of shop 1's limits.
	e.expect(req{method: "GET", path: "/v1/shops/2/buyer-limits/42", key: "shop2"}, 404, "not_found")
	if raw := e.logs.String(); strings.Contains(raw, "ann@example.com") {
		t.Errorf("the buyer id appears in the logs")
	}
}
