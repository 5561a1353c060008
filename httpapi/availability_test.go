package httpapi_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// TestAvailabilityAPI: GET …/availability answers each item asked, per
// location in the shop's order (or the query's), net of holds and safety
// stock, an unknown item as not stocked; every bad query is a 4xx naming
// the field (400 when malformed, 422 when out of bounds) and changes
// nothing.
func TestAvailabilityAPI(t *testing.T) { t.Parallel(); engines(t, testAvailabilityAPI) }

func testAvailabilityAPI(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	ctx := context.Background()
	for loc, n := range map[int64]int{1: 5, 2: 4} {
		set := n
		if _, err := e.eng.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 7, LocationID: loc}, Set: &set, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.eng.SetSafetyStock(ctx, holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 2}, 1); err != nil {
		t.Fatal(err)
	}
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), `{"item_id":7,"location_id":1,"quantity":2}`, "")}, 201, "")
	e.expect(req{method: "PUT", path: "/v1/shops/1/location-order", key: "shop1", body: `{"locations":[2,1]}`}, 200, "")

	get := func(query string) wire.Availability {
		t.Helper()
		r := e.expect(req{method: "GET", path: "/v1/shops/1/availability?" + query, key: "shop1"}, 200, "")
		var a wire.Availability
		if err := json.Unmarshal(r.body, &a); err != nil {
			t.Fatalf("%s: %v", r.body, err)
		}
		return a
	}
	a := get("items=7,8")
	if got, _ := json.Marshal(a); string(got) != `{"shop_id":1,"locations":[2,1],"items":[`+
		`{"item_id":7,"sellable":6,"whole":3,"not_stocked":false,"locations":[{"location_id":2,"sellable":3,"waiters":false,"not_stocked":false},{"location_id":1,"sellable":3,"waiters":false,"not_stocked":false}]},`+
		`{"item_id":8,"sellable":0,"whole":0,"not_stocked":true,"locations":[{"location_id":2,"sellable":0,"waiters":false,"not_stocked":true},{"location_id":1,"sellable":0,"waiters":false,"not_stocked":true}]}]}` {
		t.Fatalf("availability answered %s", got)
	}
	if a := get("items=7&locations=1"); len(a.Locations) != 1 || a.Items[0].Sellable != 3 {
		t.Fatalf("at location 1: %+v", a)
	}

	level := func() string {
		var out []string
		for loc := int64(1); loc <= 2; loc++ {
			l, err := e.eng.Level(ctx, holdfast.Key{ShopID: 1, ItemID: 7, LocationID: loc})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strconv.Itoa(l.Available)+"/"+strconv.Itoa(l.Held))
		}
		return strings.Join(out, " ")
	}
	was := level()
	ids := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = strconv.Itoa(i + 1)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		shop, query, code, field string
		status                   int
	}{
		{"1", "", "missing_field", "items", 400},
		{"1", "locations=1", "missing_field", "items", 400},
		{"1", "items=", "wrong_type", "items", 400},
		{"1", "items=1,x", "wrong_type", "items[1]", 400},
		{"1", "items=1,,2", "wrong_type", "items[1]", 400},
		{"1", "items=-1", "wrong_type", "items[0]", 400},
		{"1", "items=1&items=2", "wrong_type", "items", 400},
		{"1", "items=1&item=2", "unknown_field", "item", 400},
		{"1", "items=1&locations=a", "wrong_type", "locations[0]", 400},
		{"1", "items=0", "invalid_argument", "items[0]", 422},
		{"1", "items=3,4,3", "invalid_argument", "items[2]", 422},
		{"1", "items=" + ids(holdfast.AvailabilityItemsMax+1), "invalid_argument", "items", 422},
		{"1", "items=1&locations=2,2", "invalid_argument", "locations[1]", 422},
		{"1", "items=1&locations=" + ids(holdfast.LocationOrderMax+1), "invalid_argument", "locations", 422},
		{"2", "items=1", "invalid_argument", "locations", 422}, // shop 2 has no order
	} {
		r := e.expect(req{method: "GET", path: "/v1/shops/" + tc.shop + "/availability?" + tc.query, key: "shop" + tc.shop}, tc.status, tc.code)
		if r.errField() != tc.field {
			t.Fatalf("%s: field %q, want %q (%s)", tc.query, r.errField(), tc.field, r.body)
		}
	}
	if a := get("items=" + ids(holdfast.AvailabilityItemsMax) + "&locations=" + ids(holdfast.LocationOrderMax)); len(a.Items) != holdfast.AvailabilityItemsMax {
		t.Fatalf("the largest query answered %d items", len(a.Items))
	}
	if now := level(); now != was {
		t.Fatalf("availability reads changed stock: %s, then %s", was, now)
	}
}
