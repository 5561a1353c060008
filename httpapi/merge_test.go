package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestMergeRoute: POST …/reservations/{checkout_id}/merge moves the lines
// into "into" (summed), answers the destination, replays, leaves the source
// released with merged_into; a destination that ended is 409
// merge_into_ended (field into); bad input is 400/422 naming the field and
// changes nothing — on both engines.
func TestMergeRoute(t *testing.T) { t.Parallel(); engines(t, testMergeRoute) }

func testMergeRoute(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{engine: holdfast.Config{}})
	const res = "/v1/shops/1/reservations"
	e.expect(req{method: "PUT", path: "/v1/shops/1/inventory/42/1", key: "shop1", body: `{"available":10,"reason":"stocktake"}`}, 200, "")
	guest, customer := uuid.New(), uuid.New()
	e.expect(req{method: "POST", path: res, key: "shop1", body: fmt.Sprintf(`{"checkout_id":"%s","lines":[{"item_id":42,"location_id":1,"quantity":2}]}`, guest)}, 201, "")
	e.expect(req{method: "POST", path: res, key: "shop1", body: fmt.Sprintf(`{"checkout_id":"%s","lines":[{"item_id":42,"location_id":1,"quantity":1}]}`, customer)}, 201, "")
	merge := res + "/" + guest.String() + "/merge"

	for _, bad := range []struct {
		path, body  string
		status      int
		code, field string
	}{
		{merge, `{}`, 400, "missing_field", "into"},
		{merge, `{"into":5}`, 400, "wrong_type", "into"},
		{merge, `{"into":"x","other":1}`, 400, "unknown_field", "other"},
		{merge, `{"into":"not-a-uuid"}`, 422, "invalid_argument", "into"},
		{merge, `{"into":"00000000-0000-0000-0000-000000000000"}`, 422, "invalid_argument", "into"},
		{merge, fmt.Sprintf(`{"into":"%s"}`, guest), 422, "invalid_argument", "into"},
		{res + "/nope/merge", fmt.Sprintf(`{"into":"%s"}`, customer), 422, "invalid_argument", "checkout_id"},
		{res + "/" + uuid.NewString() + "/merge", fmt.Sprintf(`{"into":"%s"}`, customer), 404, "not_found", ""},
	} {
		if r := e.expect(req{method: "POST", path: bad.path, key: "shop1", body: bad.body}, bad.status, bad.code); r.errField() != bad.field {
			t.Errorf("%s %s: field %q, want %q", bad.path, bad.body, r.errField(), bad.field)
		}
	}
	if r := e.expect(req{method: "GET", path: res + "/" + guest.String(), key: "shop1"}, 200, ""); r.json["status"] != "held" {
		t.Fatalf("bad merges changed the source: %s", r.body)
	}

	body := fmt.Sprintf(`{"into":"%s"}`, customer)
	r := e.expect(req{method: "POST", path: merge, key: "shop1", body: body}, 200, "")
	if r.json["checkout_id"] != customer.String() || !strings.Contains(string(r.body), `"quantity":3`) || r.json["revision"] != 2.0 {
		t.Fatalf("merge: %s", r.body)
	}
	if again := e.expect(req{method: "POST", path: merge, key: "shop1", body: body}, 200, ""); string(again.body) != string(r.body) {
		t.Fatalf("retried merge: %s, want %s", again.body, r.body)
	}
	src := e.expect(req{method: "GET", path: res + "/" + guest.String(), key: "shop1"}, 200, "")
	if src.json["status"] != "released" || src.json["merged_into"] != customer.String() {
		t.Fatalf("source after the merge: %s", src.body)
	}
	e.expect(req{method: "POST", path: res + "/" + guest.String() + "/claim", key: "shop1"}, 409, "hold_released")

	// Into a claimed checkout: 409 merge_into_ended on into.
	e.expect(req{method: "POST", path: res + "/" + customer.String() + "/claim", key: "shop1"}, 200, "")
	other := uuid.New()
	e.expect(req{method: "POST", path: res, key: "shop1", body: fmt.Sprintf(`{"checkout_id":"%s","lines":[{"item_id":42,"location_id":1,"quantity":1}]}`, other)}, 201, "")
	if r := e.expect(req{method: "POST", path: res + "/" + other.String() + "/merge", key: "shop1", body: body}, 409, "merge_into_ended"); r.errField() != "into" {
		t.Fatalf("merge into a claimed checkout: %s", r.body)
	}
	e.checkInvariant()
}
