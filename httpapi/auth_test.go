package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

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
	if _, err := httpapi.RevokeKey(ctx, e.store, e.keys["shop2"]); err != nil {
		t.Fatal(err)
	}
	e.expect(req{method: "GET", path: "/v1/shops/2/inventory/7/1", key: "shop2"}, 401, "key_revoked")
	if _, err := httpapi.RevokeKey(ctx, e.store, e.keys["shop2"]); err != httpapi.ErrKeyNotFound {
		t.Fatalf("second revoke: %v", err)
	}
	keys, err := httpapi.ListKeys(ctx, e.store, 100)
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
	if _, err := httpapi.RevokeKey(ctx, e.store, strconv.FormatInt(keys[0].ID, 10)); err != nil && err != httpapi.ErrKeyNotFound {
		t.Fatal(err)
	}
}

// TestRefusedKeySaysWhy: a revoked and an expired key each answer their own
// code naming the key id, an unknown well-formed key (one from another
// database) and a malformed one say so; the server's log line of every
// refusal names the reason, and the key id when the database knows it.
func TestRefusedKeySaysWhy(t *testing.T) { t.Parallel(); engines(t, testRefusedKeySaysWhy) }

func testRefusedKeySaysWhy(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	ctx := context.Background()
	path := "/v1/shops/1/inventory/7/1"
	revoked, rk, err := httpapi.CreateKeyWith(ctx, e.store, httpapi.KeySpec{ShopID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.RevokeKey(ctx, e.store, revoked); err != nil {
		t.Fatal(err)
	}
	expired, ek, err := httpapi.CreateKeyWith(ctx, e.store, httpapi.KeySpec{ShopID: 1, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	e.sqlOn("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1",
		"UPDATE api_keys SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?", ek.ID)
	// A key of the right shape that this database never made: another
	// data directory's cluster made it.
	other := "hf_" + strings.Repeat("A", 43)
	for _, c := range []struct {
		key, code, msg, reason string
		id                     int64
	}{
		{revoked, "key_revoked", fmt.Sprintf("key %d was revoked", rk.ID), "revoked", rk.ID},
		{expired, "key_expired", fmt.Sprintf("key %d has expired", ek.ID), "expired", ek.ID},
		{other, "unauthorized", "unknown key: this server's database has no such key", "unknown", 0},
		{"hf_short", "unauthorized", "is not a holdfast key", "malformed", 0},
		{"", "unauthorized", "an Authorization: Bearer <key> header is required", "missing", 0},
	} {
		r := e.do(req{method: "GET", path: path, header: map[string]string{"Authorization": "Bearer " + c.key}})
		if r.status != 401 || r.errCode() != c.code || !strings.Contains(r.errMember("message"), c.msg) {
			t.Fatalf("%s key: %d %s, want 401 %s saying %q", c.reason, r.status, r.body, c.code, c.msg)
		}
		rid := r.header.Get("X-Request-Id")
		var line map[string]any
		for _, l := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(l, `"request_id":"`+rid+`"`) {
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatal(err)
				}
			}
		}
		if line == nil || line["key_refused"] != c.reason || (c.id != 0 && line["key_id"] != float64(c.id)) || (c.id == 0 && line["key_id"] != nil) {
			t.Fatalf("%s key: log line %v, want key_refused %q and key_id %d", c.reason, line, c.reason, c.id)
		}
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
		if _, _, err := httpapi.CreateKeyWith(ctx, e.store, httpapi.KeySpec{ShopID: c.shop, Admin: c.admin}); err == nil {
			t.Errorf("CreateKey(%d, %v) accepted", c.shop, c.admin)
		}
	}
}
