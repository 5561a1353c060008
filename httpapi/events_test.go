package httpapi_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/webhook"
)

// TestEventsFeed (#17): the feed over HTTP pages with after/next_after,
// long-polls with wait_seconds, and streams as Server-Sent Events.
func TestEventsFeed(t *testing.T) { t.Parallel(); engines(t, testEventsFeed) }

func testEventsFeed(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	if r := e.do(req{method: "PUT", path: "/v1/shops/1/inventory/42/1", key: "shop1", body: `{"available": 10, "reason": "stocktake"}`}); r.status != 200 {
		t.Fatalf("stock: %d %s", r.status, r.body)
	}
	r := e.do(req{method: "GET", path: "/v1/shops/1/events", key: "shop1"})
	evs, _ := r.json["events"].([]any)
	if r.status != 200 || len(evs) != 1 || r.json["next_after"] != float64(1) {
		t.Fatalf("feed after a stocktake: %d %s", r.status, r.body)
	}
	if ev := evs[0].(map[string]any); ev["type"] != "stock.changed" || ev["delta"] != float64(10) || ev["reason"] != "stocktake" {
		t.Fatalf("stock event %v", ev)
	}

	// A long poll answers with the event that comes while it waits.
	got := make(chan *resp, 1)
	go func() {
		res, err := e.try(req{method: "GET", path: "/v1/shops/1/events?after=1&wait_seconds=30", key: "shop1", header: map[string]string{"X-Request-Timeout": "9s"}})
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	id := "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42"
	if r := e.do(req{method: "POST", path: "/v1/shops/1/reservations", key: "shop1",
		body: `{"checkout_id": "` + id + `", "lines": [{"item_id": 42, "location_id": 1, "quantity": 2}]}`}); r.status != 201 {
		t.Fatalf("reserve: %d %s", r.status, r.body)
	}
	r = <-got
	if r == nil {
		t.FailNow()
	}
	evs, _ = r.json["events"].([]any)
	if r.status != 200 || len(evs) != 1 || evs[0].(map[string]any)["type"] != "hold.created" || evs[0].(map[string]any)["checkout_id"] != id {
		t.Fatalf("long poll: %d %s", r.status, r.body)
	}

	// Another shop's key does not reach shop 1's feed; shop 2's is empty.
	if r := e.do(req{method: "GET", path: "/v1/shops/1/events", key: "shop2"}); r.status != 403 {
		t.Fatalf("shop 2's key on shop 1's feed: %d", r.status)
	}
	if r := e.do(req{method: "GET", path: "/v1/shops/2/events", key: "shop2"}); r.status != 200 || len(r.json["events"].([]any)) != 0 || r.json["next_after"] != float64(0) {
		t.Fatalf("shop 2's feed: %d %s", r.status, r.body)
	}

	// The stream sends both events, resumes after Last-Event-ID, and ends
	// at the request's deadline.
	r = e.do(req{method: "GET", path: "/v1/shops/1/events/stream", key: "shop1", header: map[string]string{"X-Request-Timeout": "500ms"}})
	body := string(r.body)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") ||
		!strings.Contains(body, "id: 1\nevent: stock.changed\ndata: {") || !strings.Contains(body, "id: 2\nevent: hold.created\ndata: {") {
		t.Fatalf("stream: %d %q", r.status, body)
	}
	r = e.do(req{method: "GET", path: "/v1/shops/1/events/stream", key: "shop1", header: map[string]string{"X-Request-Timeout": "500ms", "Last-Event-ID": "1"}})
	if body := string(r.body); strings.Contains(body, "id: 1\n") || !strings.Contains(body, "id: 2\n") {
		t.Fatalf("stream after Last-Event-ID 1: %q", body)
	}
}

// TestWebhookRoutes (#17): admin keys register, list and remove endpoints;
// shop keys cannot.
func TestWebhookRoutes(t *testing.T) { t.Parallel(); engines(t, testWebhookRoutes) }

func testWebhookRoutes(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	r := e.do(req{method: "POST", path: "/v1/shops/1/webhooks", body: `{"url": "https://example.com/hook"}`})
	if r.status != 201 || !strings.HasPrefix(fmt.Sprint(r.json["secret"]), "whsec_") || r.json["cursor"] != float64(0) {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	id := int64(r.json["id"].(float64))
	r = e.do(req{method: "GET", path: "/v1/shops/1/webhooks"})
	hooks, _ := r.json["webhooks"].([]any)
	if r.status != 200 || len(hooks) != 1 || hooks[0].(map[string]any)["secret"] != nil {
		t.Fatalf("list: %d %s (want one endpoint, no secret)", r.status, r.body)
	}
	if r := e.do(req{method: "GET", path: "/v1/shops/1/webhooks/dead-letters"}); r.status != 200 || len(r.json["dead_letters"].([]any)) != 0 {
		t.Fatalf("dead letters: %d %s", r.status, r.body)
	}
	if r := e.do(req{method: "DELETE", path: fmt.Sprintf("/v1/shops/2/webhooks/%d", id)}); r.status != 404 {
		t.Fatalf("remove from another shop: %d %s", r.status, r.body)
	}
	if r := e.do(req{method: "DELETE", path: fmt.Sprintf("/v1/shops/1/webhooks/%d", id)}); r.status != 200 {
		t.Fatalf("remove: %d %s", r.status, r.body)
	}
	if r := e.do(req{method: "GET", path: "/v1/shops/1/webhooks"}); len(r.json["webhooks"].([]any)) != 0 {
		t.Fatalf("list after remove: %s", r.body)
	}
}

// TestEventRoutesBadInput (#17): bad input on every new route is a clear
// error naming the field, and writes nothing.
func TestEventRoutesBadInput(t *testing.T) { t.Parallel(); engines(t, testEventRoutesBadInput) }

func testEventRoutesBadInput(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	count := func() (n int) {
		t.Helper()
		const q = "SELECT (SELECT count(*) FROM webhook_endpoints) + (SELECT count(*) FROM holdfast_events)"
		e.countsOn(q, q, &n)
		return n
	}
	before := count()
	for _, c := range []struct {
		req         req
		status      int
		code, field string
	}{
		{req{method: "GET", path: "/v1/shops/1/events?after=-1", key: "shop1"}, 400, "wrong_type", "after"},
		{req{method: "GET", path: "/v1/shops/1/events?after=abc", key: "shop1"}, 400, "wrong_type", "after"},
		{req{method: "GET", path: "/v1/shops/1/events?limit=0", key: "shop1"}, 422, "invalid_argument", "limit"},
		{req{method: "GET", path: "/v1/shops/1/events?limit=1001", key: "shop1"}, 422, "invalid_argument", "limit"},
		{req{method: "GET", path: "/v1/shops/1/events?wait_seconds=31", key: "shop1"}, 422, "invalid_argument", "wait_seconds"},
		{req{method: "GET", path: "/v1/shops/1/events?after=1&after=2", key: "shop1"}, 400, "wrong_type", "after"},
		{req{method: "GET", path: "/v1/shops/1/events?cursor=1", key: "shop1"}, 400, "unknown_field", "cursor"},
		{req{method: "GET", path: "/v1/shops/0/events", key: ""}, 422, "invalid_argument", "shop_id"},
		{req{method: "GET", path: "/v1/shops/1/events/stream?limit=0", key: "shop1"}, 422, "invalid_argument", "limit"},
		{req{method: "GET", path: "/v1/shops/1/events/stream", key: "shop1", header: map[string]string{"Last-Event-ID": "x"}}, 400, "wrong_type", "Last-Event-ID"},
		{req{method: "POST", path: "/v1/shops/1/webhooks", key: "shop1", body: `{"url": "https://example.com/hook"}`}, 403, "forbidden", ""},
		{req{method: "POST", path: "/v1/shops/1/webhooks", body: `{"url": "ftp://example.com/hook"}`}, 422, "invalid_argument", "url"},
		{req{method: "POST", path: "/v1/shops/1/webhooks", body: `{"url": "http://"}`}, 422, "invalid_argument", "url"},
		{req{method: "POST", path: "/v1/shops/1/webhooks", body: `{"url": "https://u:p@example.com/"}`}, 422, "invalid_argument", "url"},
		{req{method: "POST", path: "/v1/shops/1/webhooks", body: `{"url": 5}`}, 400, "wrong_type", "url"},
		{req{method: "POST", path: "/v1/shops/1/webhooks", body: `{}`}, 400, "missing_field", "url"},
		{req{method: "POST", path: "/v1/shops/1/webhooks", body: `{"url": "https://example.com/", "secret": "mine"}`}, 400, "unknown_field", "secret"},
		{req{method: "POST", path: "/v1/shops/1/webhooks", body: `{"url": "https://example.com/", "after": -1}`}, 422, "invalid_argument", "after"},
		{req{method: "GET", path: "/v1/shops/1/webhooks", key: "shop1"}, 403, "forbidden", ""},
		{req{method: "DELETE", path: "/v1/shops/1/webhooks/abc"}, 400, "wrong_type", "webhook_id"},
		{req{method: "DELETE", path: "/v1/shops/1/webhooks/99"}, 404, "not_found", ""},
		{req{method: "DELETE", path: "/v1/shops/1/webhooks/1", key: "shop1"}, 403, "forbidden", ""},
		{req{method: "GET", path: "/v1/shops/1/webhooks/dead-letters?limit=0"}, 422, "invalid_argument", "limit"},
		{req{method: "GET", path: "/v1/shops/1/webhooks/dead-letters", key: "shop1"}, 403, "forbidden", ""},
	} {
		r := e.do(c.req)
		if r.status != c.status || r.errCode() != c.code || r.errField() != c.field {
			t.Errorf("%s %s: %d %s, want %d %s field %q", c.req.method, c.req.path, r.status, r.body, c.status, c.code, c.field)
		}
	}
	if after := count(); after != before {
		t.Fatalf("bad input wrote rows: %d before, %d after", before, after)
	}
}

// TestEventsCursorExpired (#24 item 2): a feed read (page or stream) after
// a cursor whose next events were purged answers 410 cursor_expired with
// the oldest cursor still available, never a page that skips them.
func TestEventsCursorExpired(t *testing.T) { t.Parallel(); engines(t, testEventsCursorExpired) }

func testEventsCursorExpired(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	for i := 1; i <= 3; i++ {
		if r := e.do(req{method: "PUT", path: "/v1/shops/1/inventory/42/1", key: "shop1", body: fmt.Sprintf(`{"available": %d, "reason": "stocktake"}`, i)}); r.status != 200 {
			t.Fatalf("stock: %d %s", r.status, r.body)
		}
	}
	if r := e.do(req{method: "GET", path: "/v1/shops/1/events", key: "shop1"}); r.status != 200 || r.json["next_after"] != float64(3) {
		t.Fatalf("feed: %d %s", r.status, r.body)
	}
	// The retention purge took the first two (as the sweeper's purge does).
	e.sqlOn("DELETE FROM holdfast_events WHERE shop_id = 1 AND seq <= 2", "DELETE FROM holdfast_events WHERE shop_id = 1 AND seq <= 2")
	for _, path := range []string{"/v1/shops/1/events", "/v1/shops/1/events?after=1", "/v1/shops/1/events/stream"} {
		r := e.expect(req{method: "GET", path: path, key: "shop1", header: map[string]string{"X-Request-Timeout": "500ms"}}, 410, "cursor_expired")
		if er, _ := r.json["error"].(map[string]any); er["oldest_cursor"] != float64(2) || er["field"] != "after" {
			t.Fatalf("GET %s: %s; want oldest_cursor 2", path, r.body)
		}
	}
	r := e.do(req{method: "GET", path: "/v1/shops/1/events?after=2", key: "shop1"})
	if evs, _ := r.json["events"].([]any); r.status != 200 || len(evs) != 1 || r.json["next_after"] != float64(3) {
		t.Fatalf("feed after the oldest cursor: %d %s", r.status, r.body)
	}
}

// TestWebhookDestinationRefused (#24 item 7): registering a loopback,
// link-local, private or unspecified destination answers 422
// invalid_argument on url unless the server allows the network.
func TestWebhookDestinationRefused(t *testing.T) {
	t.Parallel()
	engines(t, testWebhookDestinationRefused)
}

func testWebhookDestinationRefused(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	for _, u := range []string{"http://127.0.0.1:8080/v1/admin/keys", "http://[::1]/", "http://169.254.169.254/latest/meta-data/",
		"http://10.1.2.3/", "http://0.0.0.0:8080/", "http://0x7f000001/", "http://localhost:8080/"} {
		r := e.expect(req{method: "POST", path: "/v1/shops/1/webhooks", body: `{"url": "` + u + `"}`}, 422, "invalid_argument")
		if er, _ := r.json["error"].(map[string]any); er["field"] != "url" {
			t.Fatalf("register %s: %s; want field url", u, r.body)
		}
	}
	allowed := newEnvOn(t, engine, envOpts{server: httpapi.Config{Webhooks: webhook.Options{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}})
	if r := allowed.do(req{method: "POST", path: "/v1/shops/1/webhooks", body: `{"url": "http://127.0.0.1:8080/hook"}`}); r.status != 201 {
		t.Fatalf("register a loopback URL with 127.0.0.0/8 allowed: %d %s", r.status, r.body)
	}
}
