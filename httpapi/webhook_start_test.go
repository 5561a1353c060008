package httpapi_test

import (
	"fmt"
	"testing"
)

// TestWebhookStartsAfterRegistration (#24 review): POST …/webhooks without
// after starts the endpoint after every event committed before it,
// including those the sequencer numbers later and the key events it
// derives from them (a stock set to 0 on a new key: key.sold_out), so the
// endpoint's first events are the ones after its registration.
func TestWebhookStartsAfterRegistration(t *testing.T) {
	t.Parallel()
	engines(t, testWebhookStartsAfterRegistration)
}

func testWebhookStartsAfterRegistration(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	if r := e.do(req{method: "PUT", path: "/v1/shops/2/inventory/150/1", key: "shop2", body: `{"available": 0, "reason": "stocktake"}`}); r.status != 200 {
		t.Fatalf("stock: %d %s", r.status, r.body)
	}
	r := e.do(req{method: "POST", path: "/v1/shops/2/webhooks", body: `{"url": "https://example.com/hook"}`})
	if r.status != 201 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	cursor := int64(r.json["cursor"].(float64))
	// A feed read sequences what is pending (and derives key events).
	if r := e.do(req{method: "GET", path: "/v1/shops/2/events", key: "shop2"}); r.status != 200 {
		t.Fatalf("feed: %d %s", r.status, r.body)
	}
	if r := e.do(req{method: "PUT", path: "/v1/shops/2/inventory/150/1", key: "shop2", body: `{"available": 5, "reason": "restock"}`}); r.status != 200 {
		t.Fatalf("stock: %d %s", r.status, r.body)
	}
	r = e.do(req{method: "GET", path: fmt.Sprintf("/v1/shops/2/events?after=%d", cursor), key: "shop2"})
	evs, _ := r.json["events"].([]any)
	var types []any
	for _, ev := range evs {
		m := ev.(map[string]any)
		types = append(types, m["type"], m["reason"])
	}
	if r.status != 200 || len(evs) != 2 || fmt.Sprint(types) != "[stock.changed restock key.back_in_stock <nil>]" {
		t.Fatalf("registered at cursor %d: the endpoint's events are %v, want the restock and its key.back_in_stock only", cursor, types)
	}
}
