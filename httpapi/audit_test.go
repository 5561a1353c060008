package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
)

// TestAuditRoutes: POST …/holds/cancel and GET …/audit need an admin key
// (403 for a shop's key); bad input is 400/422 naming its field and
// changes nothing; a cancel answers what it ended and releases it; the
// audit log says who (the key), what, when and from where (remote address
// and request id) for stock changes and cancels over HTTP, and for API key
// changes made by the command line, on both engines.
func TestAuditRoutes(t *testing.T) { t.Parallel(); engines(t, testAuditRoutes) }

func testAuditRoutes(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	const cancel, audit = "/v1/shops/1/holds/cancel", "/v1/shops/1/audit"
	e.expect(req{method: "PUT", path: "/v1/shops/1/inventory/7/1", key: "shop1", body: `{"available":5,"reason":"stocktake"}`,
		header: map[string]string{"X-Request-Id": "stock-req-1"}}, 200, "")
	id := uuid.New()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 2), "")}, 201, "")

	// Scopes: a shop's own key may not cancel or read the audit log.
	e.expect(req{method: "POST", path: cancel, key: "shop1", body: `{"item_id":7,"reason":"recall"}`}, 403, "forbidden")
	e.expect(req{method: "GET", path: audit, key: "shop1"}, 403, "forbidden")

	for _, bad := range []struct {
		body   string
		status int
		code   string
		field  string
	}{
		{`{"item_id":7}`, 400, "missing_field", "reason"},
		{`{"item_id":7,"reason":""}`, 422, "invalid_argument", "reason"},
		{`{"reason":"recall"}`, 422, "invalid_argument", "filter"},
		{`{"item_id":"7","reason":"recall"}`, 400, "wrong_type", "item_id"},
		{`{"item_id":0,"reason":"recall"}`, 422, "invalid_argument", "item_id"},
		{`{"older_than_seconds":-5,"reason":"recall"}`, 422, "invalid_argument", "older_than_seconds"},
		{`{"item_id":7,"reason":"recall","limit":501}`, 422, "invalid_argument", "limit"},
		{`{"item_id":7,"reason":"recall","cursor":"bogus"}`, 422, "invalid_argument", "cursor"},
		{`{"item":7,"reason":"recall"}`, 400, "unknown_field", "item"},
	} {
		if r := e.expect(req{method: "POST", path: cancel, key: "admin", body: bad.body}, bad.status, bad.code); r.errField() != bad.field {
			t.Errorf("%s: field %q, want %q", bad.body, r.errField(), bad.field)
		}
	}
	if r := e.expect(req{method: "GET", path: res1 + "/" + id.String(), key: "shop1"}, 200, ""); r.json["status"] != "held" {
		t.Fatalf("rejected cancels changed the hold: %s", r.body)
	}
	for _, q := range []string{"?action=Not+An+Action!", "?key=0", "?limit=501", "?cursor=x", "?shop=2"} {
		r := e.do(req{method: "GET", path: audit + q, key: "admin"})
		if r.status != 400 && r.status != 422 {
			t.Errorf("GET audit%s: %d %s, want 400 or 422", q, r.status, r.body)
		}
	}

	r := e.expect(req{method: "POST", path: cancel, key: "admin", body: `{"item_id":7,"reason":"recall"}`,
		header: map[string]string{"X-Request-Id": "cancel-req-1"}}, 200, "")
	var got holdfast.CancelResult
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Cancelled) != 1 || got.Cancelled[0].CheckoutID != id || got.More ||
		len(got.Units) != 1 || got.Units[0] != (holdfast.KeyUnits{Key: holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}, Units: 2}) {
		t.Fatalf("cancel: %s", r.body)
	}
	if r := e.expect(req{method: "GET", path: res1 + "/" + id.String(), key: "shop1"}, 200, ""); r.json["status"] != "released" {
		t.Fatalf("a cancelled hold: %s", r.body)
	}
	if r := e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1", key: "shop1"}, 200, ""); r.json["held"] != 0.0 {
		t.Fatalf("units after the cancel: %s", r.body)
	}
	// A retry ends nothing, and is no error.
	if r := e.expect(req{method: "POST", path: cancel, key: "admin", body: `{"item_id":7,"reason":"recall"}`}, 200, ""); !strings.Contains(string(r.body), `"cancelled":[]`) {
		t.Fatalf("retried cancel: %s", r.body)
	}

	// Key changes by the command line, in the store's transactions.
	ctx := holdfast.WithActor(context.Background(), holdfast.Actor{Via: "cli"})
	_, rec, err := httpapi.CreateKeyWith(ctx, e.store, httpapi.KeySpec{ShopID: 1, Name: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	_, rot, err := httpapi.RotateKey(ctx, e.store, fmt.Sprint(rec.ID), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.RevokeKey(ctx, e.store, fmt.Sprint(rot.ID)); err != nil {
		t.Fatal(err)
	}

	entries := func(q string) []holdfast.AuditEntry {
		t.Helper()
		r := e.expect(req{method: "GET", path: audit + q, key: "admin"}, 200, "")
		var p holdfast.AuditPage
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		return p.Entries
	}
	set := entries("?action=stock.set")
	if len(set) != 1 || set[0].KeyID == 0 || set[0].RequestID != "stock-req-1" || set[0].Remote == "" || set[0].CreatedAt.IsZero() {
		t.Fatalf("stock.set entries: %+v", set)
	}
	if !strings.Contains(string(set[0].Detail), `"reason": "stocktake"`) && !strings.Contains(string(set[0].Detail), `"reason":"stocktake"`) {
		t.Errorf("stock.set detail: %s", set[0].Detail)
	}
	cancels := entries("?action=hold.cancel")
	if len(cancels) != 1 || cancels[0].KeyID == 0 || cancels[0].KeyID == set[0].KeyID || cancels[0].RequestID != "cancel-req-1" ||
		cancels[0].Actor != fmt.Sprintf("key %d", cancels[0].KeyID) || !strings.Contains(string(cancels[0].Detail), id.String()) {
		t.Fatalf("hold.cancel entries (the admin key's): %+v", cancels)
	}
	if byKey := entries(fmt.Sprintf("?key=%d", set[0].KeyID)); len(byKey) != 1 || byKey[0].ID != set[0].ID {
		t.Errorf("entries of the shop's key: %+v", byKey)
	}
	var keyActions []string
	for _, en := range entries("") {
		if strings.HasPrefix(en.Action, "key.") && en.Actor == "cli" && en.KeyID == 0 {
			keyActions = append(keyActions, en.Action)
		}
	}
	// Newest first: revoke, rotate, create (the env's own keys were made
	// without an actor: library).
	if strings.Join(keyActions, " ") != "key.revoke key.rotate key.create" {
		t.Fatalf("key changes by the cli: %v", keyActions)
	}
	if page := entries("?limit=1"); len(page) != 1 {
		t.Errorf("a page of 1: %+v", page)
	}
	e.checkInvariant()
}
