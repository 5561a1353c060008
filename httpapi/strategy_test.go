package httpapi_test

import (
	"strings"
	"testing"

	"github.com/holdfast/holdfast"
)

// TestStrategyRoute: PUT …/strategy sets a key's strategy on both engines
// with an admin key only; bad input names its field and changes nothing;
// a new key's strategy is the default, batch, on both engines.
func TestStrategyRoute(t *testing.T) { t.Parallel(); engines(t, testStrategyRoute) }

func testStrategyRoute(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{engine: holdfast.Config{}})
	const inv = "/v1/shops/1/inventory/42/1"
	r := e.expect(req{method: "PUT", path: inv, key: "shop1", body: `{"available":10,"reason":"stocktake"}`}, 200, "")
	if r.json["strategy"] != "batch" {
		t.Fatalf("a new key's strategy on %s: %s, want batch", engine, r.body)
	}
	e.expect(req{method: "PUT", path: inv + "/strategy", key: "shop1", body: `{"strategy":"counter"}`}, 403, "forbidden")
	for _, bad := range []struct {
		body   string
		status int
		code   string
		field  string
	}{
		{`{"strategy":"fifo"}`, 422, "invalid_argument", "strategy"},
		{`{}`, 400, "missing_field", "strategy"},
		{`{"strategy":1}`, 400, "wrong_type", "strategy"},
		{`{"strategy":"pool","pool_cap":-1}`, 422, "invalid_argument", "pool_cap"},
		{`{"strategy":"pool","cap":5}`, 400, "unknown_field", "cap"},
	} {
		if r := e.expect(req{method: "PUT", path: inv + "/strategy", key: "admin", body: bad.body}, bad.status, bad.code); r.errField() != bad.field {
			t.Errorf("%s: field %q, want %q", bad.body, r.errField(), bad.field)
		}
	}
	if r := e.expect(req{method: "GET", path: inv, key: "shop1"}, 200, ""); r.json["strategy"] != "batch" {
		t.Fatalf("strategy after rejected changes: %s", r.body)
	}
	r = e.expect(req{method: "PUT", path: inv + "/strategy", key: "admin", body: `{"strategy":"pool","pool_cap":4}`}, 200, "")
	if r.json["strategy"] != "pool" || r.json["pooled"] != 4.0 || r.json["available"] != 10.0 || r.json["sellable"] != 10.0 {
		t.Fatalf("set pool cap 4: %s", r.body)
	}
	r = e.expect(req{method: "PUT", path: inv + "/strategy", key: "admin", body: `{"strategy":"counter"}`}, 200, "")
	if r.json["strategy"] != "counter" || r.json["available"] != 10.0 {
		t.Fatalf("set counter: %s", r.body)
	}
	// An unknown strategy's answer lists the engine's own strategies.
	want := "(counter, batch, pool or slots)"
	if engine == engineMariaDB {
		want = "(counter, batch or pool)"
		e.expect(req{method: "PUT", path: inv + "/strategy", key: "admin", body: `{"strategy":"slots"}`}, 422, "invalid_argument")
	}
	if r := e.expect(req{method: "PUT", path: inv + "/strategy", key: "admin", body: `{"strategy":"bogus"}`}, 422, "invalid_argument"); !strings.Contains(string(r.body), want) {
		t.Errorf("unknown strategy on %s: %s; want the engine's strategies %s", engine, r.body, want)
	}
	e.checkInvariant()
}
