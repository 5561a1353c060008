package httpapi_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast/httpapi"
)

// TestAuth: a missing or unknown key is 401, a shop key reaches only its
// shop (403 elsewhere, on every route), an admin key reaches every shop,
// and one shop cannot see another's checkouts.
func TestAuth(t *testing.T) { t.Parallel(); engines(t, testAuth) }

func testAuth(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 5)
	e.stock(2, 7, 5)
	id := uuid.New()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 1), "")}, 201, "")

	routes := func(shop int64) []req {
		res := fmt.Sprintf("/v1/shops/%d/reservations", shop)
		inv := fmt.Sprintf("/v1/shops/%d/inventory/7/1", shop)
		return []req{
			{method: "POST", path: res, body: reserveBody(uuid.New(), line(7, 1), "")},
			{method: "GET", path: res + "/" + id.String()},
			{method: "POST", path: res + "/" + id.String() + "/claim"},
			{method: "POST", path: res + "/" + id.String() + "/release"},
			{method: "POST", path: res + "/" + id.String() + "/extend", body: `{"ttl_seconds":60}`},
			{method: "PUT", path: inv, body: `{"available":1,"reason":"x"}`},
			{method: "POST", path: inv + "/adjust", body: `{"delta":1,"reason":"x"}`},
			{method: "GET", path: inv},
		}
	}
	for _, r := range routes(2) {
		for _, c := range []struct {
			key    string
			status int
			code   string
		}{
			{"-", 401, "unauthorized"},
			{"hf_unknown", 401, "unauthorized"},
			{"shop1", 403, "forbidden"},
		} {
			r.key = c.key
			e.expect(r, c.status, c.code)
		}
		r.key = ""
		r.header = map[string]string{"Authorization": "Basic " + e.keys["shop2"]}
		e.expect(r, 401, "unauthorized")
	}
	// Nothing changed on shop 2, and shop 1's hold is intact.
	if r := e.expect(req{method: "GET", path: "/v1/shops/2/inventory/7/1", key: "shop2"}, 200, ""); r.json["available"] != 5.0 || r.json["held"] != 0.0 {
		t.Fatalf("shop 2 changed: %s", r.body)
	}
	if r := e.expect(req{method: "GET", path: res1 + "/" + id.String(), key: "shop1"}, 200, ""); r.json["status"] != "held" {
		t.Fatalf("shop 1's hold changed: %s", r.body)
	}
	// Shop 1's checkout does not exist under shop 2, even for an admin.
	e.expect(req{method: "GET", path: "/v1/shops/2/reservations/" + id.String(), key: "shop2"}, 404, "not_found")
	e.expect(req{method: "GET", path: "/v1/shops/2/reservations/" + id.String(), key: "admin"}, 404, "not_found")
	e.expect(req{method: "POST", path: "/v1/shops/2/reservations/" + id.String() + "/claim", key: "admin"}, 404, "not_found")
	// Checkout ids are per shop: shop 2 using the same id is simply another
	// checkout (no oracle of shop 1's ids), and shop 1's hold is untouched.
	e.expect(req{method: "POST", path: "/v1/shops/2/reservations", key: "shop2", body: reserveBody(id, line(7, 1), "")}, 201, "")
	if r := e.expect(req{method: "GET", path: res1 + "/" + id.String(), key: "shop1"}, 200, ""); r.json["status"] != "held" {
		t.Fatalf("shop 1's hold changed: %s", r.body)
	}
	e.expect(req{method: "POST", path: "/v1/shops/2/reservations/" + id.String() + "/release", key: "shop2"}, 200, "")

	// The admin key reaches every shop.
	for _, shop := range []int64{1, 2, 3} {
		e.expect(req{method: "GET", path: "/v1/shops/" + strconv.FormatInt(shop, 10) + "/inventory/7/1", key: "admin"}, 200, "")
	}
	e.expect(req{method: "POST", path: "/v1/shops/2/reservations", key: "admin", body: reserveBody(uuid.New(), line(7, 1), "")}, 201, "")

	// A revoked key is refused (the test server does not cache keys).
	ctx := context.Background()
	if _, err := httpapi.RevokeKeyIn(ctx, e.store, e.keys["shop2"]); err != nil {
		t.Fatal(err)
	}
	e.expect(req{method: "GET", path: "/v1/shops/2/inventory/7/1", key: "shop2"}, 401, "unauthorized")
	if _, err := httpapi.RevokeKeyIn(ctx, e.store, e.keys["shop2"]); err != httpapi.ErrKeyNotFound {
		t.Fatalf("second revoke: %v", err)
	}
	keys, err := httpapi.ListKeysIn(ctx, e.store, 100)
	if err != nil || len(keys) != 3 {
		t.Fatalf("list: %v %v", keys, err)
	}
	revoked := 0
	for _, k := range keys {
		if k.RevokedAt != nil {
			revoked++
		}
	}
	if revoked != 1 {
		t.Fatalf("%d revoked keys, want 1", revoked)
	}
	// Revoke by id.
	if _, err := httpapi.RevokeKeyIn(ctx, e.store, strconv.FormatInt(keys[0].ID, 10)); err != nil && err != httpapi.ErrKeyNotFound {
		t.Fatal(err)
	}
}

// TestCreateKeyArgs: a key is for one shop or admin, never both or neither.
func TestCreateKeyArgs(t *testing.T) { t.Parallel(); engines(t, testCreateKeyArgs) }

func testCreateKeyArgs(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	ctx := context.Background()
	for _, c := range []struct {
		shop  int64
		admin bool
	}{{0, false}, {1, true}, {-1, false}} {
		if _, _, err := httpapi.CreateKeyIn(ctx, e.store, httpapi.KeySpec{ShopID: c.shop, Admin: c.admin}); err == nil {
			t.Errorf("CreateKey(%d, %v) accepted", c.shop, c.admin)
		}
	}
}
