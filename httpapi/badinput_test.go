package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// badInput is one request the API must refuse, with the status, code and
// field it must name.
type badInput struct {
	name        string
	method      string
	path        string
	body        string
	contentType string
	status      int
	code        string
	field       string
}

const validID = "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42"

func badInputs() []badInput {
	okLine := line(7, 1)
	many := strings.TrimSuffix(strings.Repeat(okLine+",", 101), ",")
	inv := "/v1/shops/1/inventory/7/1"
	hold := res1 + "/" + validID
	return []badInput{
		{"malformed JSON", "POST", res1, `{"checkout_id":`, "", 400, "malformed_json", ""},
		{"not JSON", "POST", res1, `checkout please`, "", 400, "malformed_json", ""},
		{"trailing data", "POST", res1, reserveBody(uuid.MustParse(validID), okLine, "") + `{}`, "", 400, "malformed_json", ""},
		{"empty body", "POST", res1, ` `, "", 400, "missing_field", "checkout_id"},
		{"array body", "POST", res1, `[1,2]`, "", 400, "wrong_type", ""},
		{"unknown field", "POST", res1, `{"checkout_id":"` + validID + `","lines":[` + okLine + `],"coupon":"x"}`, "", 400, "unknown_field", "coupon"},
		{"unknown field, case", "POST", res1, `{"Checkout_ID":"` + validID + `","lines":[` + okLine + `]}`, "", 400, "unknown_field", "Checkout_ID"},
		{"unknown line field", "POST", res1, reserveBody(uuid.MustParse(validID), `{"item_id":7,"location_id":1,"quantity":1,"price":3}`, ""), "", 400, "unknown_field", "lines[0].price"},
		{"missing checkout", "POST", res1, `{"lines":[` + okLine + `]}`, "", 400, "missing_field", "checkout_id"},
		{"missing lines", "POST", res1, `{"checkout_id":"` + validID + `"}`, "", 400, "missing_field", "lines"},
		{"missing quantity", "POST", res1, reserveBody(uuid.MustParse(validID), okLine+`,{"item_id":8,"location_id":1}`, ""), "", 400, "missing_field", "lines[1].quantity"},
		{"checkout wrong type", "POST", res1, `{"checkout_id":42,"lines":[` + okLine + `]}`, "", 400, "wrong_type", "checkout_id"},
		{"lines wrong type", "POST", res1, `{"checkout_id":"` + validID + `","lines":{}}`, "", 400, "wrong_type", "lines"},
		{"line wrong type", "POST", res1, `{"checkout_id":"` + validID + `","lines":[7]}`, "", 400, "wrong_type", "lines[0]"},
		{"quantity string", "POST", res1, reserveBody(uuid.MustParse(validID), `{"item_id":7,"location_id":1,"quantity":"1"}`, ""), "", 400, "wrong_type", "lines[0].quantity"},
		{"quantity fraction", "POST", res1, reserveBody(uuid.MustParse(validID), `{"item_id":7,"location_id":1,"quantity":1.5}`, ""), "", 400, "wrong_type", "lines[0].quantity"},
		{"quantity exponent", "POST", res1, reserveBody(uuid.MustParse(validID), `{"item_id":7,"location_id":1,"quantity":1e2}`, ""), "", 400, "wrong_type", "lines[0].quantity"},
		{"quantity null", "POST", res1, reserveBody(uuid.MustParse(validID), `{"item_id":7,"location_id":1,"quantity":null}`, ""), "", 400, "wrong_type", "lines[0].quantity"},
		{"ttl string", "POST", res1, reserveBody(uuid.MustParse(validID), okLine, `,"ttl_seconds":"60"`), "", 400, "wrong_type", "ttl_seconds"},
		{"checkout not a UUID", "POST", res1, `{"checkout_id":"order-17","lines":[` + okLine + `]}`, "", 422, "invalid_argument", "checkout_id"},
		{"checkout braces", "POST", res1, `{"checkout_id":"{` + validID + `}","lines":[` + okLine + `]}`, "", 422, "invalid_argument", "checkout_id"},
		{"checkout nil UUID", "POST", res1, `{"checkout_id":"00000000-0000-0000-0000-000000000000","lines":[` + okLine + `]}`, "", 422, "invalid_argument", "checkout_id"},
		{"item zero", "POST", res1, reserveBody(uuid.MustParse(validID), `{"item_id":0,"location_id":1,"quantity":1}`, ""), "", 422, "invalid_argument", "lines[0].item_id"},
		{"location negative", "POST", res1, reserveBody(uuid.MustParse(validID), `{"item_id":7,"location_id":-3,"quantity":1}`, ""), "", 422, "invalid_argument", "lines[0].location_id"},
		{"item beyond int64", "POST", res1, reserveBody(uuid.MustParse(validID), `{"item_id":9223372036854775808,"location_id":1,"quantity":1}`, ""), "", 422, "invalid_argument", "lines[0].item_id"},
		{"quantity zero", "POST", res1, reserveBody(uuid.MustParse(validID), line(7, 0), ""), "", 422, "invalid_argument", "lines[0].quantity"},
		{"quantity negative", "POST", res1, reserveBody(uuid.MustParse(validID), line(7, -1), ""), "", 422, "invalid_argument", "lines[0].quantity"},
		{"quantity above max", "POST", res1, reserveBody(uuid.MustParse(validID), line(7, 10001), ""), "", 422, "invalid_argument", "lines[0].quantity"},
		{"empty cart", "POST", res1, reserveBody(uuid.MustParse(validID), "", ""), "", 422, "invalid_argument", "lines"},
		{"too many lines", "POST", res1, reserveBody(uuid.MustParse(validID), many, ""), "", 422, "invalid_argument", "lines"},
		{"duplicate lines", "POST", res1, reserveBody(uuid.MustParse(validID), line(7, 1)+","+line(8, 1)+","+line(7, 2), ""), "", 422, "invalid_argument", "lines[2]"},
		{"ttl zero", "POST", res1, reserveBody(uuid.MustParse(validID), okLine, `,"ttl_seconds":0`), "", 422, "invalid_argument", "ttl_seconds"},
		{"ttl too long", "POST", res1, reserveBody(uuid.MustParse(validID), okLine, `,"ttl_seconds":3601`), "", 422, "invalid_argument", "ttl_seconds"},
		{"body over 1 MiB", "POST", res1, `{"checkout_id":"` + validID + `","lines":[` + okLine + `],"x":"` + strings.Repeat("a", 1<<20) + `"}`, "", 413, "body_too_large", ""},
		{"no content type", "POST", res1, reserveBody(uuid.MustParse(validID), okLine, ""), "-", 415, "unsupported_media_type", "Content-Type"},
		{"form content type", "POST", res1, reserveBody(uuid.MustParse(validID), okLine, ""), "application/x-www-form-urlencoded", 415, "unsupported_media_type", "Content-Type"},
		{"shop not a number", "POST", "/v1/shops/abc/reservations", reserveBody(uuid.MustParse(validID), okLine, ""), "", 400, "wrong_type", "shop_id"},
		{"shop zero", "POST", "/v1/shops/0/reservations", reserveBody(uuid.MustParse(validID), okLine, ""), "", 422, "invalid_argument", "shop_id"},
		{"shop beyond int64", "GET", "/v1/shops/9223372036854775808/inventory/7/1", "", "", 422, "invalid_argument", "shop_id"},
		{"path checkout not a UUID", "POST", res1 + "/order-17/claim", "", "", 422, "invalid_argument", "checkout_id"},
		{"claim with a body", "POST", hold + "/claim", `{"force":true}`, "", 400, "unknown_field", "force"},
		{"release with text body", "POST", hold + "/release", `x`, "text/plain", 415, "unsupported_media_type", "Content-Type"},
		{"extend no ttl", "POST", hold + "/extend", `{}`, "", 400, "missing_field", "ttl_seconds"},
		{"extend without a body", "POST", hold + "/extend", "", "-", 400, "missing_field", "ttl_seconds"},
		{"adjustment id too long", "POST", inv + "/adjust", `{"delta":1,"reason":"x","adjustment_id":"` + strings.Repeat("a", 129) + `"}`, "", 422, "invalid_argument", "adjustment_id"},
		{"adjustment id empty", "POST", inv + "/adjust", `{"delta":1,"reason":"x","adjustment_id":""}`, "", 422, "invalid_argument", "adjustment_id"},
		{"member twice", "POST", res1, `{"checkout_id":"` + validID + `","checkout_id":"` + uuid.NewString() + `","lines":[` + okLine + `]}`, "", 400, "malformed_json", "checkout_id"},
		{"member twice, escaped", "POST", res1, `{"checkout_id":"` + uuid.NewString() + `","lines":[` + okLine + `],"checkout\u005fid":"` + uuid.NewString() + `"}`, "", 400, "malformed_json", "checkout_id"},
		{"line member twice", "POST", res1, `{"checkout_id":"` + uuid.NewString() + `","lines":[{"item_id":7,"location_id":1,"quantity":1,"quantity":2}]}`, "", 400, "malformed_json", "lines[0].quantity"},
		{"stock member twice", "PUT", inv, `{"available":3,"reason":"x","available":4}`, "", 400, "malformed_json", "available"},
		{"extend ttl negative", "POST", hold + "/extend", `{"ttl_seconds":-5}`, "", 422, "invalid_argument", "ttl_seconds"},
		{"set negative", "PUT", inv, `{"available":-1,"reason":"x"}`, "", 422, "invalid_argument", "available"},
		{"set too big", "PUT", inv, `{"available":2147483648,"reason":"x"}`, "", 422, "invalid_argument", "available"},
		{"set no reason", "PUT", inv, `{"available":3}`, "", 400, "missing_field", "reason"},
		{"set empty reason", "PUT", inv, `{"available":3,"reason":""}`, "", 422, "invalid_argument", "reason"},
		{"set long reason", "PUT", inv, `{"available":3,"reason":"` + strings.Repeat("r", 501) + `"}`, "", 422, "invalid_argument", "reason"},
		{"item path zero", "PUT", "/v1/shops/1/inventory/0/1", `{"available":3,"reason":"x"}`, "", 422, "invalid_argument", "item_id"},
		{"location path text", "GET", "/v1/shops/1/inventory/7/x", "", "", 400, "wrong_type", "location_id"},
		{"adjust below zero", "POST", inv + "/adjust", `{"delta":-6,"reason":"x"}`, "", 422, "invalid_argument", "delta"},
		{"adjust fraction", "POST", inv + "/adjust", `{"delta":0.5,"reason":"x"}`, "", 400, "wrong_type", "delta"},
		{"unknown route", "GET", "/v1/shops/1/orders", "", "", 404, "route_not_found", ""},
		{"wrong method", "DELETE", inv, "", "", 405, "method_not_allowed", ""},
	}
}

// snapshot is everything a bad request must leave alone.
type snapshot struct {
	level                 holdfast.Level
	holds, ledger, active int
}

func (e *env) snapshot() snapshot {
	e.t.Helper()
	ctx := context.Background()
	e.checkInvariant()
	l, err := e.eng.Level(ctx, holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	s := snapshot{level: *l}
	const counts = `SELECT (SELECT count(*) FROM holds), (SELECT count(*) FROM inventory_ledger),
		(SELECT count(*) FROM holds WHERE status = 'held')`
	e.countsOn(counts, counts, &s.holds, &s.ledger, &s.active)
	return s
}

// TestBadInput sends every kind of bad request and checks the status, the
// code, the field, and that nothing changed.
func TestBadInput(t *testing.T) { t.Parallel(); engines(t, testBadInput) }

func testBadInput(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 5)
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.MustParse(validID), line(7, 1), "")}, 201, "")
	before := e.snapshot()
	for _, c := range badInputs() {
		r := req{method: c.method, path: c.path, key: "shop1", body: c.body, contentType: c.contentType}
		res := e.do(r)
		if res.status != c.status || res.errCode() != c.code || res.errField() != c.field {
			t.Errorf("%s: got %d %s/%q (%s), want %d %s/%q", c.name, res.status, res.errCode(), res.errField(),
				truncate(res.body), c.status, c.code, c.field)
		}
		if res.errMember("message") == "" {
			t.Errorf("%s: no message", c.name)
		}
	}
	if after := e.snapshot(); after != before {
		t.Fatalf("bad input changed the database:\nbefore %+v\nafter  %+v", before, after)
	}
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return fmt.Sprintf("%s…", b[:200])
	}
	return string(b)
}
