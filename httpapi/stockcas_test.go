package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/holdfast/holdfast"
)

// TestStockCASRoute: a stock set or adjustment with expected_available
// applies on a match and answers 409 stock_changed with the current value
// on a mismatch, changing nothing; PUT /v1/shops/{shop}/inventory imports
// many keys all or nothing, replays on its import_id, names a refused
// entry, and refuses bad input with a 400/422 naming the field — on both
// engines.
func TestStockCASRoute(t *testing.T) { t.Parallel(); engines(t, testStockCASRoute) }

func testStockCASRoute(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{engine: holdfast.Config{}})
	const inv = "/v1/shops/1/inventory/42/1"
	e.expect(req{method: "PUT", path: inv, key: "shop1", body: `{"available":5,"reason":"stocktake"}`}, 200, "")
	r := e.expect(req{method: "PUT", path: inv, key: "shop1", body: `{"available":8,"expected_available":5,"reason":"sync"}`}, 200, "")
	if r.json["available"] != 8.0 {
		t.Fatalf("matching set: %s", r.body)
	}
	r = e.expect(req{method: "POST", path: inv + "/adjust", key: "shop1", body: `{"delta":-1,"expected_available":5,"reason":"shrinkage"}`}, 409, "stock_changed")
	var body struct {
		Error struct {
			Field        string `json:"field"`
			StockChanged struct {
				ItemID     int64 `json:"item_id"`
				LocationID int64 `json:"location_id"`
				Expected   int   `json:"expected_available"`
				Current    int   `json:"current_available"`
				Index      *int  `json:"index"`
			} `json:"stock_changed"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	if sc := body.Error.StockChanged; sc.ItemID != 42 || sc.LocationID != 1 || sc.Expected != 5 || sc.Current != 8 || sc.Index != nil || body.Error.Field != "expected_available" {
		t.Fatalf("stock_changed body: %s", r.body)
	}
	if r := e.expect(req{method: "GET", path: inv, key: "shop1"}, 200, ""); r.json["available"] != 8.0 {
		t.Fatalf("after a refused change: %s", r.body)
	}
	for _, bad := range []struct {
		method, path, body string
		status             int
		code, field        string
	}{
		{"PUT", inv, `{"available":1,"expected_available":"5","reason":"r"}`, 400, "wrong_type", "expected_available"},
		{"PUT", inv, `{"available":1,"expected_available":-1,"reason":"r"}`, 422, "invalid_argument", "expected_available"},
		{"PUT", "/v1/shops/1/inventory", `{"import_id":"a","reason":"r","entries":{}}`, 400, "wrong_type", "entries"},
		{"PUT", "/v1/shops/1/inventory", `{"import_id":"a","reason":"r","entries":[{"item_id":1,"location_id":1}]}`, 400, "missing_field", "entries[0].available"},
		{"PUT", "/v1/shops/1/inventory", `{"import_id":"a","reason":"r","entries":[{"item_id":1,"location_id":1,"available":1,"expect":1}]}`, 400, "unknown_field", "entries[0].expect"},
		{"PUT", "/v1/shops/1/inventory", `{"reason":"r","entries":[{"item_id":1,"location_id":1,"available":1}]}`, 400, "missing_field", "import_id"},
		{"PUT", "/v1/shops/1/inventory", `{"import_id":"a","reason":"r","entries":[]}`, 422, "invalid_argument", "entries"},
		{"PUT", "/v1/shops/1/inventory", `{"import_id":"a","reason":"r","entries":[{"item_id":1,"location_id":1,"available":1},{"item_id":1,"location_id":1,"available":2}]}`, 422, "invalid_argument", "entries[1]"},
		{"PUT", "/v1/shops/1/inventory", tooMany(), 422, "invalid_argument", "entries"},
	} {
		if r := e.expect(req{method: bad.method, path: bad.path, key: "shop1", body: bad.body}, bad.status, bad.code); r.errField() != bad.field {
			t.Errorf("%.80s: field %q, want %q", bad.body, r.errField(), bad.field)
		}
	}

	// An import: entry 1's expectation is stale, so nothing applies.
	const imp = "/v1/shops/1/inventory"
	stale := `{"import_id":"erp-1","reason":"sync","entries":[{"item_id":43,"location_id":1,"available":4},{"item_id":42,"location_id":1,"available":9,"expected_available":5}]}`
	r = e.expect(req{method: "PUT", path: imp, key: "shop1", body: stale}, 409, "stock_changed")
	if !strings.Contains(string(r.body), `"index":1`) || r.errField() != "entries[1].expected_available" || !strings.Contains(string(r.body), `"current_available":8`) {
		t.Fatalf("refused import: %s", r.body)
	}
	if r := e.expect(req{method: "GET", path: "/v1/shops/1/inventory/43/1", key: "shop1"}, 200, ""); r.json["available"] != 0.0 {
		t.Fatalf("entry 0 of a refused import applied: %s", r.body)
	}
	good := strings.Replace(stale, `"expected_available":5`, `"expected_available":8`, 1)
	r = e.expect(req{method: "PUT", path: imp, key: "shop1", body: good}, 200, "")
	if r.json["replayed"] != false || !strings.Contains(string(r.body), `"available":9`) || !strings.Contains(string(r.body), `"available":4`) {
		t.Fatalf("import: %s", r.body)
	}
	r = e.expect(req{method: "PUT", path: imp, key: "shop1", body: good}, 200, "")
	if r.json["replayed"] != true {
		t.Fatalf("import retried: %s", r.body)
	}
	e.expect(req{method: "PUT", path: imp, key: "shop1", body: strings.Replace(good, `"available":4`, `"available":5`, 1)}, 409, "idempotency_conflict")
	e.checkInvariant()
}

func tooMany() string {
	var b strings.Builder
	b.WriteString(`{"import_id":"big","reason":"r","entries":[`)
	for i := range holdfast.StockImportEntriesMax + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"item_id":%d,"location_id":1,"available":1}`, i+1)
	}
	b.WriteString(`]}`)
	return b.String()
}
