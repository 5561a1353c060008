package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestBundleRoutes walks the bundle routes: a definition set, read,
// reserved through the ordinary reserve route (the hold's lines are the
// components) and deleted; every bad definition a 4xx naming its code and
// field that changes nothing.
func TestBundleRoutes(t *testing.T) { t.Parallel(); engines(t, testBundleRoutes) }

func testBundleRoutes(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{engine: holdfast.Config{}})
	k := "shop1"
	const b = "/v1/shops/1/bundles/900"
	for _, item := range []int{42, 43} {
		e.expect(req{method: "PUT", path: fmt.Sprintf("/v1/shops/1/inventory/%d/1", item), key: k, body: `{"available":10,"reason":"stocktake"}`}, 200, "")
	}
	e.expect(req{method: "GET", path: b, key: k}, 404, "not_found")
	const def = `{"shop_id":1,"item_id":900,"components":[{"item_id":42,"quantity":1},{"item_id":43,"quantity":2}]}`
	r := e.expect(req{method: "PUT", path: b, key: k, body: `{"components":[{"item_id":42,"quantity":1},{"item_id":43,"quantity":2}]}`}, 200, "")
	if strings.TrimSpace(string(r.body)) != def {
		t.Fatalf("set bundle: %s, want %s", r.body, def)
	}
	many := make([]string, holdfast.BundleComponentsMax+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"item_id":%d,"quantity":1}`, 1000+i)
	}
	for _, bad := range []struct {
		path, body string
		status     int
		code       string
		field      string
	}{
		{b, `{}`, 400, "missing_field", "components"},
		{b, `{"components":{}}`, 400, "wrong_type", "components"},
		{b, `{"components":[]}`, 422, "invalid_argument", "components"},
		{b, `{"components":[` + strings.Join(many, ",") + `]}`, 422, "invalid_argument", "components"},
		{b, `{"components":[{"item_id":42,"quantity":0}]}`, 422, "invalid_argument", "components[0].quantity"},
		{b, `{"components":[{"item_id":42}]}`, 400, "missing_field", "components[0].quantity"},
		{b, `{"components":[{"item_id":"42","quantity":1}]}`, 400, "wrong_type", "components[0].item_id"},
		{b, `{"components":[{"item_id":42,"quantity":1,"location_id":1}]}`, 400, "unknown_field", "components[0].location_id"},
		{b, `{"components":[{"item_id":42,"quantity":1},{"item_id":42,"quantity":1}]}`, 422, "invalid_argument", "components[1].item_id"},
		{b, `{"components":[{"item_id":900,"quantity":1}]}`, 422, "invalid_argument", "components[0].item_id"},
		// Nesting, and a stocked item as a bundle.
		{"/v1/shops/1/bundles/901", `{"components":[{"item_id":900,"quantity":1}]}`, 422, "invalid_argument", "components[0].item_id"},
		{"/v1/shops/1/bundles/42", `{"components":[{"item_id":7,"quantity":1}]}`, 422, "invalid_argument", "item_id"},
		{"/v1/shops/1/bundles/0", `{"components":[{"item_id":7,"quantity":1}]}`, 422, "invalid_argument", "item_id"},
	} {
		if r := e.expect(req{method: "PUT", path: bad.path, key: k, body: bad.body}, bad.status, bad.code); r.errField() != bad.field {
			t.Errorf("%s %s: field %q, want %q", bad.path, bad.body, r.errField(), bad.field)
		}
	}
	if r := e.expect(req{method: "GET", path: b, key: k}, 200, ""); strings.TrimSpace(string(r.body)) != def {
		t.Fatalf("bundle after refused definitions: %s, want %s", r.body, def)
	}
	e.expect(req{method: "GET", path: "/v1/shops/1/bundles/901", key: k}, 404, "not_found")

	// Reserved like any item: the hold's lines are the components.
	r = e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(900, 2), "")}, 201, "")
	if got := fmt.Sprint(r.json["lines"]); !strings.Contains(got, "item_id:42") || !strings.Contains(got, "quantity:4") || strings.Contains(got, "item_id:900") {
		t.Fatalf("bundle hold lines: %s", r.body)
	}
	// Short: the component names itself.
	r = e.expect(req{method: "POST", path: res1, key: k, body: reserveBody(uuid.New(), line(900, 4), "")}, 409, "insufficient_stock")
	if !strings.Contains(string(r.body), `"item_id":43`) || strings.Contains(string(r.body), `"item_id":900`) {
		t.Fatalf("short bundle: %s, want component 43 named", r.body)
	}

	e.expect(req{method: "DELETE", path: b, key: k}, 200, "")
	e.expect(req{method: "DELETE", path: b, key: k}, 200, "")
	e.expect(req{method: "GET", path: b, key: k}, 404, "not_found")
}
