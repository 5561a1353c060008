package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

func editBody(rev int64, lines string, extra string) string {
	return fmt.Sprintf(`{"revision":%d,"lines":[%s]%s}`, rev, lines, extra)
}

func quantities(r *resp, member string) map[float64]float64 {
	out := map[float64]float64{}
	ls, _ := r.json[member].([]any)
	for _, l := range ls {
		m := l.(map[string]any)
		out[m["item_id"].(float64)] = m["quantity"].(float64)
	}
	return out
}

// TestEditRoute walks PUT …/reservations/{id} through its answers: an edit,
// its retry, conflicts, a short line that changes nothing, bad input that
// changes nothing, ended holds, scopes and shops.
func TestEditRoute(t *testing.T) { t.Parallel(); engines(t, testEditRoute) }

func testEditRoute(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 5)
	e.stock(1, 8, 2)
	id := uuid.New()
	path := res1 + "/" + id.String()
	r := e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 2), "")}, 201, "")
	if r.json["revision"] != float64(1) {
		t.Fatalf("reserve answered revision %v, want 1: %s", r.json["revision"], r.body)
	}
	expires := r.json["expires_at"]

	r = e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(2, line(7, 3)+","+line(8, 1), "")}, 200, "")
	if r.json["revision"] != float64(2) || r.json["status"] != "held" || r.json["expires_at"] != expires ||
		fmt.Sprint(quantities(r, "lines")) != fmt.Sprint(map[float64]float64{7: 3, 8: 1}) {
		t.Fatalf("edit: %s", r.body)
	}
	// The retry answers the same.
	again := e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(2, line(8, 1)+","+line(7, 3), "")}, 200, "")
	if string(again.body) != string(r.body) {
		t.Fatalf("retried edit answered\n%s\nthe edit answered\n%s", again.body, r.body)
	}
	e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(2, line(7, 1), "")}, 409, "idempotency_conflict")
	c := e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(5, line(7, 1), "")}, 409, "revision_conflict")
	if cur, _ := c.json["error"].(map[string]any)["current_revision"].(float64); cur != 2 {
		t.Fatalf("revision_conflict without current_revision 2: %s", c.body)
	}

	// Short: names the line; the hold and the stock stay as they were.
	before := e.expect(req{method: "GET", path: path, key: "shop1"}, 200, "")
	s := e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(3, line(7, 3)+","+line(8, 3), `,"ttl_seconds":60`)}, 409, "insufficient_stock")
	ls, _ := s.json["error"].(map[string]any)["lines"].([]any)
	if len(ls) != 1 || fmt.Sprint(ls[0]) != fmt.Sprint(map[string]any{"item_id": 8.0, "location_id": 1.0, "requested": 3.0, "sellable": 2.0}) {
		t.Fatalf("short edit: %s", s.body)
	}
	if after := e.expect(req{method: "GET", path: path, key: "shop1"}, 200, ""); string(after.body) != string(before.body) {
		t.Fatalf("a refused edit changed the hold:\n%s\nwas\n%s", after.body, before.body)
	}

	// Bad input: 400/422 naming the field; nothing changes.
	for _, c := range []struct {
		body, code, field string
		status            int
	}{
		{`{"lines":[` + line(7, 1) + `]}`, "missing_field", "revision", 400},
		{editBody(0, line(7, 1), ""), "invalid_argument", "revision", 422},
		{`{"revision":"3","lines":[` + line(7, 1) + `]}`, "wrong_type", "revision", 400},
		{`{"revision":3}`, "missing_field", "lines", 400},
		{editBody(3, "", ""), "invalid_argument", "lines", 422},
		{editBody(3, line(7, 0), ""), "invalid_argument", "lines[0].quantity", 422},
		{editBody(3, line(7, 1)+","+line(7, 2), ""), "invalid_argument", "lines[1]", 422},
		{editBody(3, line(7, 1), `,"ttl_seconds":0`), "invalid_argument", "ttl_seconds", 422},
		{editBody(3, line(7, 1), `,"checkout_id":"x"`), "unknown_field", "checkout_id", 400},
	} {
		r := e.expect(req{method: "PUT", path: path, key: "shop1", body: c.body}, c.status, c.code)
		if r.errField() != c.field {
			t.Fatalf("%s: field %q, want %q", c.body, r.errField(), c.field)
		}
	}
	if after := e.expect(req{method: "GET", path: path, key: "shop1"}, 200, ""); string(after.body) != string(before.body) {
		t.Fatalf("rejected input changed the hold:\n%s\nwas\n%s", after.body, before.body)
	}
	e.expect(req{method: "PUT", path: res1 + "/not-a-uuid", key: "shop1", body: editBody(3, line(7, 1), "")}, 422, "invalid_argument")
	e.expect(req{method: "PUT", path: res1 + "/" + uuid.NewString(), key: "shop1", body: editBody(2, line(7, 1), "")}, 404, "not_found")
	// Another shop's checkout id is another checkout.
	e.expect(req{method: "PUT", path: "/v1/shops/2/reservations/" + id.String(), key: "shop2", body: editBody(3, line(7, 1), "")}, 404, "not_found")
	e.expect(req{method: "PUT", path: path, key: "shop2", body: editBody(3, line(7, 1), "")}, 403, "forbidden")
	e.expect(req{method: "PUT", path: path, key: "-", body: editBody(3, line(7, 1), "")}, 401, "unauthorized")

	// A TTL moves the expiry from now.
	r = e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(3, line(7, 1), `,"ttl_seconds":600`)}, 200, "")
	if want := e.clock.Now().Add(10 * time.Minute).UTC().Format("2006-01-02T15:04:05.000000Z07:00"); r.json["expires_at"] != want {
		t.Fatalf("edit with ttl_seconds 600: expires_at %v, want %s (six fractional digits)", r.json["expires_at"], want)
	}
	// Ended holds.
	e.expect(req{method: "POST", path: path + "/claim", key: "shop1"}, 200, "")
	e.expect(req{method: "PUT", path: path, key: "shop1", body: editBody(4, line(7, 1), "")}, 409, "hold_claimed")
	rel := uuid.New()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(rel, line(7, 1), "")}, 201, "")
	e.expect(req{method: "POST", path: res1 + "/" + rel.String() + "/release", key: "shop1"}, 200, "")
	e.expect(req{method: "PUT", path: res1 + "/" + rel.String(), key: "shop1", body: editBody(2, line(7, 1), "")}, 409, "hold_released")
	exp := uuid.New()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(exp, line(7, 1), `,"ttl_seconds":60`)}, 201, "")
	e.clock.Advance(2 * time.Minute)
	if _, err := e.eng.SweepOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.expect(req{method: "PUT", path: res1 + "/" + exp.String(), key: "shop1", body: editBody(2, line(7, 1), "")}, 410, "hold_expired")
	if l, err := e.eng.Level(t.Context(), holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}); err != nil || l.Available != 4 || l.Held != 0 {
		t.Fatalf("level %+v %v, want 4 available (one claimed), none held", l, err)
	}
}

// TestPartialClaimRoute: POST …/claim with lines claims those and releases
// the rest; its retry answers the same; bad lines change nothing.
func TestPartialClaimRoute(t *testing.T) { t.Parallel(); engines(t, testPartialClaimRoute) }

func testPartialClaimRoute(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 5)
	e.stock(1, 8, 5)
	id := uuid.New()
	path := res1 + "/" + id.String()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 2)+","+line(8, 1), "")}, 201, "")

	for _, c := range []struct {
		body, code, field string
		status            int
	}{
		{`{"lines":[` + line(7, 3) + `]}`, "invalid_argument", "lines[0].quantity", 422},
		{`{"lines":[` + line(9, 1) + `]}`, "invalid_argument", "lines[0]", 422},
		{`{"lines":[]}`, "invalid_argument", "lines", 422},
		{`{"lines":{}}`, "wrong_type", "lines", 400},
		{`{"items":[]}`, "unknown_field", "items", 400},
	} {
		r := e.expect(req{method: "POST", path: path + "/claim", key: "shop1", body: c.body}, c.status, c.code)
		if r.errField() != c.field {
			t.Fatalf("%s: field %q, want %q", c.body, r.errField(), c.field)
		}
	}
	if r := e.expect(req{method: "GET", path: path, key: "shop1"}, 200, ""); r.json["status"] != "held" {
		t.Fatalf("rejected partial claims changed the hold: %s", r.body)
	}

	body := `{"lines":[` + line(7, 1) + `]}`
	r := e.expect(req{method: "POST", path: path + "/claim", key: "shop1", body: body}, 200, "")
	if r.json["status"] != "claimed" || fmt.Sprint(quantities(r, "lines")) != fmt.Sprint(map[float64]float64{7: 1}) ||
		fmt.Sprint(quantities(r, "released")) != fmt.Sprint(map[float64]float64{7: 1, 8: 1}) {
		t.Fatalf("partial claim: %s", r.body)
	}
	again := e.expect(req{method: "POST", path: path + "/claim", key: "shop1", body: body}, 200, "")
	if string(again.body) != string(r.body) {
		t.Fatalf("retried partial claim answered\n%s\nthe claim answered\n%s", again.body, r.body)
	}
	e.expect(req{method: "POST", path: path + "/claim", key: "shop1", body: `{"lines":[` + line(7, 2) + `]}`}, 409, "hold_claimed")
	// A claim without lines of the claimed checkout is a retry too.
	e.expect(req{method: "POST", path: path + "/claim", key: "shop1", body: `{}`}, 200, "")
	for item, avail := range map[int64]int{7: 4, 8: 5} {
		if l, err := e.eng.Level(t.Context(), holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}); err != nil || l.Available != avail || l.Held != 0 {
			t.Fatalf("item %d: %+v %v, want %d available, none held", item, l, err, avail)
		}
	}
	e.expect(req{method: "POST", path: res1 + "/" + uuid.NewString() + "/claim", key: "shop1", body: body}, 404, "not_found")
}
