package httpapi_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/google/uuid"
)

// Issue #24 item 6 over HTTP, on both engines.

// TestStockChangeClaimReasonEvent: an adjustment with reason "claim" naming
// a claimed checkout is a stock.changed event in the feed, like any other.
func TestStockChangeClaimReasonEvent(t *testing.T) {
	t.Parallel()
	engines(t, testStockChangeClaimReasonEvent)
}

func testStockChangeClaimReasonEvent(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 10)
	id := uuid.New()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 2), "")}, 201, "")
	e.expect(req{method: "POST", path: res1 + "/" + id.String() + "/claim", key: "shop1"}, 200, "")
	r := e.expect(req{method: "GET", path: "/v1/shops/1/events?limit=1000", key: "shop1"}, 200, "")
	after := r.json["next_after"]
	e.expect(req{method: "POST", path: "/v1/shops/1/inventory/7/1/adjust", key: "shop1",
		body: fmt.Sprintf(`{"delta": -1, "reason": "claim", "reference": %q}`, id.String())}, 200, "")
	r = e.expect(req{method: "GET", path: fmt.Sprintf("/v1/shops/1/events?after=%v", after), key: "shop1"}, 200, "")
	var stock []map[string]any
	for _, ev := range r.json["events"].([]any) {
		if m := ev.(map[string]any); m["type"] == "stock.changed" {
			stock = append(stock, m)
		}
	}
	if len(stock) != 1 || stock[0]["delta"] != float64(-1) || stock[0]["reason"] != "claim" || stock[0]["reference"] != id.String() {
		t.Fatalf("an adjustment with reason claim naming a claimed checkout: events %s, want one stock.changed (delta -1)", r.body)
	}
}

// TestEditCurrentRevisionNewTTL: PUT at the hold's current revision with
// another ttl_seconds is 409 idempotency_conflict and changes nothing; the
// same revision, lines and ttl_seconds is the retry, answered as before.
func TestEditCurrentRevisionNewTTL(t *testing.T) {
	t.Parallel()
	engines(t, testEditCurrentRevisionNewTTL)
}

func testEditCurrentRevisionNewTTL(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 5)
	id := uuid.New()
	path := res1 + "/" + id.String()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 2), `,"ttl_seconds":600`)}, 201, "")
	e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(1, line(7, 2), `,"ttl_seconds":1200`)}, 409, "idempotency_conflict")
	edited := e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(2, line(7, 3), "")}, 200, "")
	c := e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(2, line(7, 3), `,"ttl_seconds":1200`)}, 409, "idempotency_conflict")
	if c.errMember("message") == "" {
		t.Fatalf("conflict without a message: %s", c.body)
	}
	if r := e.expect(req{method: "GET", path: path, key: "shop1"}, 200, ""); r.json["expires_at"] != edited.json["expires_at"] || r.json["revision"] != float64(2) {
		t.Fatalf("after the refused edit the hold is %s, was %s", r.body, edited.body)
	}
	withTTL := e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(3, line(7, 3), `,"ttl_seconds":1200`)}, 200, "")
	again := e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(3, line(7, 3), `,"ttl_seconds":1200`)}, 200, "")
	if string(again.body) != string(withTTL.body) {
		t.Fatalf("retry of revision 3 answered\n%s\nthe edit answered\n%s", again.body, withTTL.body)
	}
	e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(3, line(7, 3), "")}, 409, "idempotency_conflict")
}

// TestListingForeignCursor: a cursor of shop 1's holds used on shop 2 (or
// with other filters, or a ledger cursor on another key or on the holds,
// or a holds cursor on a ledger) is 400
// invalid_cursor naming the cursor, not a page of the other listing.
func TestListingForeignCursor(t *testing.T) { t.Parallel(); engines(t, testListingForeignCursor) }

func testListingForeignCursor(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	for shop := int64(1); shop <= 2; shop++ {
		e.stock(shop, 7, 50)
		e.stock(shop, 8, 50)
		for range 6 {
			e.expect(req{method: "POST", path: fmt.Sprintf("/v1/shops/%d/reservations", shop), key: "admin", body: reserveBody(uuid.New(), line(7, 1), "")}, 201, "")
		}
	}
	r := e.expect(req{method: "GET", path: "/v1/shops/1/holds?limit=3", key: "admin"}, 200, "")
	next, _ := r.json["next"].(string)
	if next == "" {
		t.Fatalf("first page of shop 1 without next: %s", r.body)
	}
	e.expect(req{method: "GET", path: "/v1/shops/1/holds?limit=3&cursor=" + url.QueryEscape(next), key: "admin"}, 200, "")
	r = e.expect(req{method: "GET", path: "/v1/shops/1/holds?limit=2&status=held", key: "admin"}, 200, "")
	filtered, _ := r.json["next"].(string)
	e.stock(1, 7, 49)
	r = e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1/ledger?limit=1", key: "admin"}, 200, "")
	ledger, _ := r.json["next"].(string)
	if filtered == "" || ledger == "" {
		t.Fatalf("no next of the filtered holds (%q) or of the ledger (%q)", filtered, ledger)
	}
	for _, c := range []struct{ name, path string }{
		{"shop 1's cursor on shop 2", "/v1/shops/2/holds?limit=3&cursor=" + url.QueryEscape(next)},
		{"an unfiltered cursor with a filter", "/v1/shops/1/holds?status=held&cursor=" + url.QueryEscape(next)},
		{"a filtered cursor without its filter", "/v1/shops/1/holds?cursor=" + url.QueryEscape(filtered)},
		{"a ledger cursor on another item", "/v1/shops/1/inventory/8/1/ledger?cursor=" + url.QueryEscape(ledger)},
		{"a ledger cursor on another shop", "/v1/shops/2/inventory/7/1/ledger?cursor=" + url.QueryEscape(ledger)},
		{"a ledger cursor on the holds", "/v1/shops/1/holds?cursor=" + url.QueryEscape(ledger)},
		{"a holds cursor on a ledger", "/v1/shops/1/inventory/7/1/ledger?cursor=" + url.QueryEscape(next)},
	} {
		res := e.do(req{method: "GET", path: c.path, key: "admin"})
		if res.status != 400 || res.errCode() != "invalid_cursor" || res.errField() != "cursor" || res.errMember("message") == "" {
			t.Errorf("%s: got %d %s/%q (%s), want 400 invalid_cursor/cursor", c.name, res.status, res.errCode(), res.errField(), truncate(res.body))
		}
	}
}
