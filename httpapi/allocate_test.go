package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestAllocationAPI: a reservation line with location_id 0 is allocated
// from its candidates (or the shop's location order, set and read over
// the API), split when it allows it; the answer names the locations; a
// line no candidate can supply is 409 naming the item at location 0; every
// bad allocation member is a 4xx naming the field, and writes nothing.
func TestAllocationAPI(t *testing.T) { t.Parallel(); engines(t, testAllocationAPI) }

func testAllocationAPI(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	ctx := context.Background()
	for loc, n := range map[int64]int{1: 1, 2: 4, 3: 4} {
		set := n
		if _, err := e.eng.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 7, LocationID: loc}, Set: &set, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	reserve := func(lines string, status int, code string) *resp {
		t.Helper()
		return e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), lines, "")}, status, code)
	}
	linesOf := func(r *resp) []holdfast.Line {
		t.Helper()
		var h struct{ Lines []holdfast.Line }
		if err := json.Unmarshal(r.body, &h); err != nil {
			t.Fatal(err)
		}
		return h.Lines
	}

	r := reserve(`{"item_id":7,"location_id":0,"quantity":3,"candidates":[1,3,2]}`, 201, "")
	if got := linesOf(r); len(got) != 1 || got[0] != (holdfast.Line{ItemID: 7, LocationID: 3, Quantity: 3}) {
		t.Fatalf("allocated to %+v, want location 3: %s", got, r.body)
	}
	r = reserve(`{"item_id":7,"location_id":0,"quantity":5,"candidates":[1,2,3],"split":true}`, 201, "")
	// 1, 4 and 1 left: no location has 5; 1 from location 1, 4 from 2.
	if got := linesOf(r); len(got) != 2 || got[0] != (holdfast.Line{ItemID: 7, LocationID: 1, Quantity: 1}) || got[1] != (holdfast.Line{ItemID: 7, LocationID: 2, Quantity: 4}) {
		t.Fatalf("split to %+v: %s", got, r.body)
	}
	// Location 3 has 1 left: short by item, at location 0, with the total.
	r = reserve(`{"item_id":7,"location_id":0,"quantity":2,"candidates":[1,2,3],"split":true}`, 409, "insufficient_stock")
	var short struct {
		Error struct{ Lines []holdfast.Shortfall }
	}
	if err := json.Unmarshal(r.body, &short); err != nil || len(short.Error.Lines) != 1 || short.Error.Lines[0] != (holdfast.Shortfall{ItemID: 7, LocationID: 0, Requested: 2, Sellable: 1}) {
		t.Fatalf("short answer %s (%v)", r.body, err)
	}

	// The shop's order, over the API.
	e.expect(req{method: "GET", path: "/v1/shops/1/location-order", key: "shop1"}, 200, "")
	r = e.expect(req{method: "PUT", path: "/v1/shops/1/location-order", key: "shop1", body: `{"locations":[3,2]}`}, 200, "")
	if string(r.body) != `{"shop_id":1,"locations":[3,2]}`+"\n" {
		t.Fatalf("set order answered %s", r.body)
	}
	r = e.expect(req{method: "GET", path: "/v1/shops/1/location-order", key: "shop1"}, 200, "")
	if string(r.body) != `{"shop_id":1,"locations":[3,2]}`+"\n" {
		t.Fatalf("read order answered %s", r.body)
	}
	r = reserve(`{"item_id":7,"location_id":0,"quantity":1}`, 201, "")
	if got := linesOf(r); len(got) != 1 || got[0].LocationID != 3 {
		t.Fatalf("default order allocated to %+v", got)
	}

	lv := func() string {
		var out string
		for loc := int64(1); loc <= 3; loc++ {
			l, err := e.eng.Level(ctx, holdfast.Key{ShopID: 1, ItemID: 7, LocationID: loc})
			if err != nil {
				t.Fatal(err)
			}
			out += fmt.Sprintf("%d/%d ", l.Available, l.Held)
		}
		return out
	}
	was := lv()
	nine := `[1,2,3,4,5,6,7,8,9]`
	for _, tc := range []struct {
		lines, code, field string
		status             int
	}{
		{`{"item_id":7,"location_id":1,"quantity":1,"candidates":[2]}`, "invalid_argument", "lines[0].candidates", 422},
		{`{"item_id":7,"location_id":1,"quantity":1,"split":true}`, "invalid_argument", "lines[0].split", 422},
		{`{"item_id":7,"location_id":0,"quantity":1,"split":"yes"}`, "wrong_type", "lines[0].split", 400},
		{`{"item_id":7,"location_id":0,"quantity":1,"candidates":` + nine + `}`, "invalid_argument", "lines[0].candidates", 422},
		{`{"item_id":7,"location_id":0,"quantity":1,"candidates":[1,2,1]}`, "invalid_argument", "lines[0].candidates[2]", 422},
		{`{"item_id":7,"location_id":0,"quantity":1,"candidates":[0]}`, "invalid_argument", "lines[0].candidates[0]", 422},
		{`{"item_id":7,"location_id":0,"quantity":1,"candidates":"1,2"}`, "wrong_type", "lines[0].candidates", 400},
		{`{"item_id":7,"location_id":0,"quantity":1,"candidates":[1.5]}`, "wrong_type", "lines[0].candidates[0]", 400},
		{`{"item_id":7,"location_id":-1,"quantity":1}`, "invalid_argument", "lines[0].location_id", 422},
		{`{"item_id":7,"location_id":2,"quantity":1},{"item_id":7,"location_id":0,"quantity":1}`, "invalid_argument", "lines[1]", 422},
		{`{"item_id":7,"location_id":0,"quantity":1},{"item_id":7,"location_id":2,"quantity":1}`, "invalid_argument", "lines[1]", 422},
	} {
		r := reserve(tc.lines, tc.status, tc.code)
		if r.errField() != tc.field {
			t.Fatalf("%s: field %q, want %q (%s)", tc.lines, r.errField(), tc.field, r.body)
		}
	}
	for _, tc := range []struct {
		body, code, field string
		status            int
	}{
		{`{"locations":[1,1]}`, "invalid_argument", "locations[1]", 422},
		{`{"locations":[0]}`, "invalid_argument", "locations[0]", 422},
		{`{"locations":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}`, "invalid_argument", "locations", 422},
		{`{"locations":3}`, "wrong_type", "locations", 400},
		{`{}`, "missing_field", "locations", 400},
		{`{"locations":[1],"order":[2]}`, "unknown_field", "order", 400},
	} {
		r := e.expect(req{method: "PUT", path: "/v1/shops/1/location-order", key: "shop1", body: tc.body}, tc.status, tc.code)
		if r.errField() != tc.field {
			t.Fatalf("%s: field %q, want %q (%s)", tc.body, r.errField(), tc.field, r.body)
		}
	}
	if now := lv(); now != was {
		t.Fatalf("rejected requests changed stock: %s, then %s", was, now)
	}
	if got, err := e.eng.LocationOrder(ctx, 1); err != nil || len(got) != 2 || got[0] != 3 {
		t.Fatalf("rejected orders changed the order: %v %v", got, err)
	}
	// Clearing the order: a line without candidates is then refused.
	e.expect(req{method: "PUT", path: "/v1/shops/1/location-order", key: "shop1", body: `{"locations":[]}`}, 200, "")
	r = reserve(`{"item_id":7,"location_id":0,"quantity":1}`, 422, "invalid_argument")
	if r.errField() != "lines[0].location_id" {
		t.Fatalf("no order: field %q (%s)", r.errField(), r.body)
	}
}
