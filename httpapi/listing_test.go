package httpapi_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/google/uuid"
)

// TestListings: GET …/holds and …/ledger answer pages that follow each
// other to the end, filter, and stay within the shop of the key.
func TestListings(t *testing.T) { t.Parallel(); engines(t, testListings) }

func testListings(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 50)
	e.stock(1, 8, 50)
	e.stock(2, 7, 50)
	var ids []string
	for i := range 5 {
		id := uuid.New()
		item := int64(7 + i%2)
		e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(item, 1), "")}, 201, "")
		ids = append(ids, id.String())
	}
	e.expect(req{method: "POST", path: res1 + "/" + ids[0] + "/claim", key: "shop1"}, 200, "")
	e.expect(req{method: "POST", path: "/v1/shops/2/reservations", key: "shop2", body: reserveBody(uuid.New(), line(7, 1), "")}, 201, "")

	seen := map[string]int{}
	path := "/v1/shops/1/holds?limit=2"
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("no end of the pages")
		}
		r := e.expect(req{method: "GET", path: path, key: "shop1"}, 200, "")
		hs := r.json["holds"].([]any)
		if len(hs) > 2 {
			t.Fatalf("a page of %d with limit=2", len(hs))
		}
		for _, h := range hs {
			seen[h.(map[string]any)["checkout_id"].(string)]++
		}
		next, _ := r.json["next"].(string)
		if next == "" {
			break
		}
		path = "/v1/shops/1/holds?limit=2&cursor=" + url.QueryEscape(next)
	}
	if len(seen) != 5 {
		t.Errorf("listed %d holds of shop 1, want 5: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("hold %s listed %d times", id, n)
		}
	}
	r := e.expect(req{method: "GET", path: "/v1/shops/1/holds?item=8&status=held", key: "shop1"}, 200, "")
	if n := len(r.json["holds"].([]any)); n != 2 {
		t.Errorf("held holds on item 8: %d, want 2 (%s)", n, r.body)
	}
	r = e.expect(req{method: "GET", path: "/v1/shops/1/holds?status=claimed", key: "admin"}, 200, "")
	if hs := r.json["holds"].([]any); len(hs) != 1 || hs[0].(map[string]any)["checkout_id"] != ids[0] {
		t.Errorf("claimed holds: %s", r.body)
	}
	e.expect(req{method: "GET", path: "/v1/shops/1/holds", key: "shop2"}, 403, "forbidden")
	e.expect(req{method: "GET", path: "/v1/shops/1/holds", key: "-"}, 401, "unauthorized")

	// The ledger of item 7: the stocktake, then the claim of ids[0].
	r = e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1/ledger?limit=1", key: "shop1"}, 200, "")
	es := r.json["entries"].([]any)
	if len(es) != 1 || es[0].(map[string]any)["reason"] != "claim" || es[0].(map[string]any)["reference"] != ids[0] {
		t.Fatalf("the newest entry of item 7: %s", r.body)
	}
	next, _ := r.json["next"].(string)
	r = e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1/ledger?cursor=" + url.QueryEscape(next), key: "shop1"}, 200, "")
	if es := r.json["entries"].([]any); len(es) != 1 || fmt.Sprint(es[0].(map[string]any)["available_after"]) != "50" || r.json["next"] != nil {
		t.Errorf("the second page of item 7's ledger: %s", r.body)
	}
	e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1/ledger", key: "shop2"}, 403, "forbidden")
}

// TestListingBadInput: every malformed listing is refused with its code
// and field, and nothing is written.
func TestListingBadInput(t *testing.T) { t.Parallel(); engines(t, testListingBadInput) }

func testListingBadInput(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 5)
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.MustParse(validID), line(7, 1), "")}, 201, "")
	before := e.snapshot()
	holds, ledger := "/v1/shops/1/holds", "/v1/shops/1/inventory/7/1/ledger"
	cases := []struct {
		name, path string
		status     int
		code       string
		field      string
	}{
		{"unknown parameter", holds + "?shop=2", 400, "unknown_field", "shop"},
		{"repeated parameter", holds + "?item=1&item=2", 400, "wrong_type", "item"},
		{"item not a number", holds + "?item=abc", 400, "wrong_type", "item"},
		{"item negative", holds + "?item=-1", 400, "wrong_type", "item"},
		{"item zero", holds + "?item=0", 422, "invalid_argument", "item"},
		{"item empty", holds + "?item=", 400, "wrong_type", "item"},
		{"location beyond int64", holds + "?location=9223372036854775808", 422, "invalid_argument", "location"},
		{"status unknown", holds + "?status=pending", 422, "invalid_argument", "status"},
		{"limit zero", holds + "?limit=0", 422, "invalid_argument", "limit"},
		{"limit too large", holds + "?limit=501", 422, "invalid_argument", "limit"},
		{"cursor garbage", holds + "?cursor=abc", 422, "invalid_argument", "cursor"},
		{"cursor of the ledger", holds + "?cursor=l1.AAAAAAAAAAE", 400, "invalid_cursor", "cursor"},
		{"shop zero", "/v1/shops/0/holds", 422, "invalid_argument", "shop_id"},
		{"shop not a number", "/v1/shops/x/holds", 400, "wrong_type", "shop_id"},
		{"ledger item zero", "/v1/shops/1/inventory/0/1/ledger", 422, "invalid_argument", "item_id"},
		{"ledger location not a number", "/v1/shops/1/inventory/7/x/ledger", 400, "wrong_type", "location_id"},
		{"ledger unknown parameter", ledger + "?status=held", 400, "unknown_field", "status"},
		{"ledger limit too large", ledger + "?limit=1000", 422, "invalid_argument", "limit"},
		{"ledger cursor of the holds", ledger + "?cursor=h1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 400, "invalid_cursor", "cursor"},
		{"ledger cursor truncated", ledger + "?cursor=l1.AAAA", 422, "invalid_argument", "cursor"},
	}
	for _, c := range cases {
		res := e.do(req{method: "GET", path: c.path, key: "shop1"})
		if res.status != c.status || res.errCode() != c.code || res.errField() != c.field || res.errMember("message") == "" {
			t.Errorf("%s: got %d %s/%q (%s), want %d %s/%q", c.name, res.status, res.errCode(), res.errField(),
				truncate(res.body), c.status, c.code, c.field)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		e.expect(req{method: m, path: holds, key: "shop1"}, 405, "method_not_allowed")
	}
	if after := e.snapshot(); after != before {
		t.Fatalf("bad input changed the database:\nbefore %+v\nafter  %+v", before, after)
	}
}
