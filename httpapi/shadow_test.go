package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgshadow"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/holdfast/holdfast/rediscluster"
	"github.com/holdfast/holdfast/shadow"
)

// shadowLifetime is the layer's HoldLifetimeMax in these tests: how long a
// shop warms after entering shadow, on the injected clock.
const shadowLifetime = time.Hour

// newShadowEnv is newEnv with the shadow layer in front: the Redis legacy
// store (a private redis-server, or REDIS_URL) and holdfast on a fresh
// database, one injected clock for all three.
func newShadowEnv(t *testing.T) (*env, *shadow.Engine) {
	t.Helper()
	ctx := context.Background()
	u, rsrv, err := rediscluster.URLOrStart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rsrv != nil {
		t.Cleanup(func() { _ = rsrv.Stop() })
	}
	opt, err := goredis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })

	db := pgtest.DB(t, 20)
	clock := pgtest.NewClock(time.Time{})
	hc, err := postgres.New(db.Pool, holdfast.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	p := "t:" + uuid.NewString() + ":"
	store, err := lredis.New(rdb, db.Pool, lredis.Config{Prefix: p, KeyTemplate: p + "stock:{shop}:{item}:{location}", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	sh, err := shadow.New(ctx, pgshadow.NewStore(db.Pool), store, hc, shadow.Config{HoldLifetimeMax: shadowLifetime, Now: clock.Now, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: sh, Store: pgstore.Service(db.Pool), Logger: log, KeyCacheTTL: -1,
		Collectors: sh.Collectors(), Workers: []httpapi.Worker{sh}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() { cancel(); serveErr = <-done })
		return serveErr
	}
	e := &env{t: t, db: db, hc: hc, eng: hc, name: enginePostgres, store: pgstore.Service(db.Pool), srv: srv, clock: clock, url: "http://" + ln.Addr().String(), logs: logs, stop: stop,
		keys: map[string]string{}, http: &http.Client{Timeout: 30 * time.Second}}
	for name, shop := range map[string]int64{"shop1": 1, "admin": 0} {
		key, _, err := httpapi.CreateKey(ctx, pgstore.Service(db.Pool), shop, shop == 0)
		if err != nil {
			t.Fatal(err)
		}
		e.keys[name] = key
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
		e.checkInvariant()
	})
	return e, sh
}

// modeOf is the shop's mode as a fresh look at the database says (not the
// serving replica's cache), "" when it is not enrolled.
func modeOf(t *testing.T, e *env, shop int64) shadow.Mode {
	t.Helper()
	admin, err := shadow.New(context.Background(), pgshadow.NewStore(e.db.Pool), nil, nil, shadow.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := admin.Mode(shop)
	return m
}

// TestShadowAdminRoutes walks the operator's routes of the shadow layer
// through a ramp: refusals (skipped mode, unknown mode, unknown shop,
// warming, bad thresholds) answer 4xx with code and field and change
// nothing; promote-next takes the smallest ready shop; revert and
// revert-all are the kill switch. Every answer is checked against
// openapi.json.
func TestShadowAdminRoutes(t *testing.T) {
	t.Parallel()
	e, sh := newShadowEnv(t)
	ctx := context.Background()
	const base = "/v1/admin/shadow"

	// Admin keys only.
	e.expect(req{method: "GET", path: base + "/report", key: "-"}, 401, "unauthorized")
	e.expect(req{method: "GET", path: base + "/report", key: "shop1"}, 403, "forbidden")
	e.expect(req{method: "POST", path: base + "/revert-all", key: "shop1"}, 403, "forbidden")
	r := e.expect(req{method: "GET", path: base + "/report"}, 200, "")
	if fmt.Sprint(r.json["shops"]) != "[]" {
		t.Fatalf("report before any enrollment: %s", r.body)
	}

	if err := sh.Enroll(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	n := 100
	if _, err := sh.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "test stock"}); err != nil {
		t.Fatal(err)
	}

	// Bad input: 4xx with code and field; nothing changes.
	mode1 := base + "/shops/1/mode"
	for _, c := range []struct {
		path, body  string
		status      int
		code, field string
	}{
		{mode1, `{"mode":"primary"}`, 409, "mode_skipped", "mode"},
		{mode1, `{"mode":"holdfast","reason":"yolo"}`, 409, "mode_skipped", "mode"},
		{mode1, `{"mode":"turbo"}`, 422, "invalid_argument", "mode"},
		{mode1, `{"mode":"shadow","why":"x"}`, 400, "unknown_field", "why"},
		{mode1, `{"mode":7}`, 400, "wrong_type", "mode"},
		{mode1, `{"reason":"no mode"}`, 400, "missing_field", "mode"},
		{mode1, `{"mode":"shadow","reason":"` + strings.Repeat("x", httpapi.ShadowReasonMaxLen+1) + `"}`, 422, "invalid_argument", "reason"},
		{base + "/shops/99/mode", `{"mode":"shadow"}`, 404, "shop_not_enrolled", "shop_id"},
		{base + "/shops/0/mode", `{"mode":"shadow"}`, 422, "invalid_argument", "shop_id"},
		{base + "/shops/x/mode", `{"mode":"shadow"}`, 400, "wrong_type", "shop_id"},
	} {
		r := e.expect(req{method: "PUT", path: c.path, body: c.body}, c.status, c.code)
		if r.errField() != c.field {
			t.Errorf("PUT %s %s: field %q, want %q", c.path, c.body, r.errField(), c.field)
		}
	}
	e.expect(req{method: "PUT", path: mode1}, 400, "missing_field")
	e.expect(req{method: "PUT", path: mode1, body: `{"mode":"shadow"}`, contentType: "text/plain"}, 415, "unsupported_media_type")
	if m := modeOf(t, e, 1); m != shadow.ModeLegacy {
		t.Fatalf("after refused changes shop 1 is %q, want legacy", m)
	}
	if m := modeOf(t, e, 99); m != "" {
		t.Fatalf("a refused change enrolled shop 99 (%q)", m)
	}

	// Into shadow: holdfast's stock is seeded from the legacy ledger, and
	// the shop warms.
	r = e.expect(req{method: "PUT", path: mode1, body: `{"mode":"shadow","reason":"ramp"}`}, 200, "")
	if r.json["mode"] != "shadow" || r.json["shadow_since"] == nil {
		t.Fatalf("to shadow: %s", r.body)
	}
	e.expect(req{method: "PUT", path: mode1, body: `{"mode":"shadow"}`}, 200, "") // again: nothing changes
	r = e.expect(req{method: "PUT", path: mode1, body: `{"mode":"primary"}`}, 409, "shop_warming")
	if r.errField() != "mode" || modeOf(t, e, 1) != shadow.ModeShadow {
		t.Fatalf("primary while warming: %s; shop 1 now %q", r.body, modeOf(t, e, 1))
	}

	// Traffic through the layer, compared.
	var held []uuid.UUID
	for range 5 {
		id := uuid.New()
		e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 1), "")}, 201, "")
		held = append(held, id)
	}
	e.expect(req{method: "POST", path: res1 + "/" + held[0].String() + "/claim", key: "shop1"}, 200, "")
	r = e.expect(req{method: "GET", path: base + "/report"}, 200, "")
	shops := r.json["shops"].([]any)
	if len(shops) != 2 {
		t.Fatalf("report: %s", r.body)
	}
	s1 := shops[0].(map[string]any)
	if s1["shop_id"] != 1.0 || s1["mode"] != "shadow" || s1["warming"] != true || s1["compared"].(float64) < 6 || s1["agreement_rate"] != 1.0 {
		t.Fatalf("shop 1 in the report: %v", s1)
	}

	// The plan: bad thresholds are refused; smallest traffic first.
	e.expect(req{method: "GET", path: base + "/plan?until=turbo"}, 422, "invalid_argument")
	if r := e.expect(req{method: "GET", path: base + "/plan?agreement_min=lots"}, 400, "wrong_type"); r.errField() != "agreement_min" {
		t.Fatalf("agreement_min=lots: %s", r.body)
	}
	e.expect(req{method: "GET", path: base + "/plan?agreement_min=1.5"}, 422, "invalid_argument")
	e.expect(req{method: "GET", path: base + "/plan?compared_min=0"}, 422, "invalid_argument")
	e.expect(req{method: "GET", path: base + "/plan?bogus=1"}, 400, "unknown_field")
	r = e.expect(req{method: "GET", path: base + "/plan?compared_min=1&p99_ratio_max=1e6&p99_max_ms=1e6"}, 200, "")
	plan := r.json["shops"].([]any)
	if len(plan) != 2 || plan[0].(map[string]any)["shop_id"] != 2.0 || plan[1].(map[string]any)["ready"] != false {
		t.Fatalf("plan (shop 2 first, shop 1 warming): %s", r.body)
	}

	// promote-next: shop 2 (no traffic) to shadow; then shop 1, warmed, to
	// primary; then nothing is ready up to primary.
	e.expect(req{method: "POST", path: base + "/promote-next", body: `{"until":"turbo"}`}, 422, "invalid_argument")
	e.expect(req{method: "POST", path: base + "/promote-next", body: `{"compared_min":"many"}`}, 400, "wrong_type")
	r = e.expect(req{method: "POST", path: base + "/promote-next", body: `{"compared_min":1}`}, 200, "")
	if r.json["shop_id"] != 2.0 || r.json["mode"] != "shadow" {
		t.Fatalf("first promote-next: %s", r.body)
	}
	e.clock.Advance(shadowLifetime + time.Second)
	r = e.expect(req{method: "POST", path: base + "/promote-next", body: `{"compared_min":1,"until":"primary","p99_ratio_max":1000000,"p99_max_ms":1000000}`}, 200, "")
	if r.json["shop_id"] != 1.0 || r.json["mode"] != "primary" || modeOf(t, e, 1) != shadow.ModePrimary {
		t.Fatalf("second promote-next: %s", r.body)
	}
	// Shop 2 has nothing compared: not ready at the default sample size.
	e.expect(req{method: "POST", path: base + "/promote-next", body: `{"until":"primary"}`}, 409, "nothing_ready")
	if modeOf(t, e, 2) != shadow.ModeShadow {
		t.Fatal("a refused promote-next changed shop 2")
	}

	// The kill switch: a hold made under holdfast truth still claims after.
	id := uuid.New()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 2), "")}, 201, "")
	e.expect(req{method: "POST", path: base + "/shops/99/revert"}, 404, "shop_not_enrolled")
	e.expect(req{method: "POST", path: base + "/shops/1/revert", body: `{"now":true}`}, 400, "unknown_field")
	r = e.expect(req{method: "POST", path: base + "/shops/1/revert"}, 200, "")
	if r.json["mode"] != "legacy" || modeOf(t, e, 1) != shadow.ModeLegacy {
		t.Fatalf("revert: %s", r.body)
	}
	if err := sh.WaitMode(ctx, 1, shadow.ModeLegacy); err != nil {
		t.Fatal(err)
	}
	e.expect(req{method: "POST", path: res1 + "/" + id.String() + "/claim", key: "shop1"}, 200, "")
	r = e.expect(req{method: "POST", path: base + "/revert-all", body: `{}`}, 200, "")
	if fmt.Sprint(r.json["reverted"]) != "[2]" || modeOf(t, e, 2) != shadow.ModeLegacy {
		t.Fatalf("revert-all: %s", r.body)
	}
	r = e.expect(req{method: "POST", path: base + "/revert-all"}, 200, "")
	if fmt.Sprint(r.json["reverted"]) != "[]" {
		t.Fatalf("revert-all again: %s", r.body)
	}
}

// TestShadowRoutesOff: without the layer the routes answer 404 shadow_off
// to an admin key, and still 401/403 to others.
func TestShadowRoutesOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.expect(req{method: "GET", path: "/v1/admin/shadow/report", key: "-"}, 401, "unauthorized")
	e.expect(req{method: "GET", path: "/v1/admin/shadow/plan", key: "shop1"}, 403, "forbidden")
	for _, r := range []req{
		{method: "GET", path: "/v1/admin/shadow/report"},
		{method: "GET", path: "/v1/admin/shadow/plan"},
		{method: "PUT", path: "/v1/admin/shadow/shops/1/mode", body: `{"mode":"shadow"}`},
		{method: "POST", path: "/v1/admin/shadow/promote-next"},
		{method: "POST", path: "/v1/admin/shadow/shops/1/revert"},
		{method: "POST", path: "/v1/admin/shadow/revert-all"},
	} {
		if res := e.expect(r, 404, "shadow_off"); !strings.Contains(res.errMember("message"), "--legacy") {
			t.Errorf("%s %s: %s", r.method, r.path, res.body)
		}
	}
}
