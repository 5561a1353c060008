package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// testAuditAttempts: WriteAudit commits and rolls back with its
// transaction; ListAudit reads a shop's entries newest first, filtered,
// after a cursor, at most limit+1, every field as written; PurgeAudit
// deletes only entries past the retention; ReadNow is the database's now;
// BuyerOf answers a hold's buyer hash (nil without one) or ErrNotFound.
func testAuditAttempts[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	var zero TTx
	write := func(r holdfast.AuditRecord, fail error) error {
		return in.Driver.Attempt(ctx, zero, true, holdfast.RouteAdjust, func(tx TTx) error {
			if err := in.Driver.WriteAudit(ctx, tx, r); err != nil {
				return err
			}
			return fail
		})
	}
	list := func(q holdfast.AuditQuery, cur *holdfast.AuditCursor) []holdfast.AuditEntry {
		t.Helper()
		var out []holdfast.AuditEntry
		if err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteRead, func(tx TTx) error {
			var err error
			out, err = in.Driver.ListAudit(ctx, tx, q, cur)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	actor := holdfast.Actor{KeyID: 5, KeyName: "ops", Via: "http", Remote: "192.0.2.7:1234", RequestID: "r-1"}
	rec := func(shop int64, action string) holdfast.AuditRecord {
		return holdfast.AuditRecord{ShopID: shop, Action: action, Actor: actor, Detail: []byte(`{"n":1}`)}
	}
	boom := errors.New("drivertest: fail after the write")
	if err := write(rec(1, holdfast.AuditStockSet), boom); !errors.Is(err, boom) {
		t.Fatalf("failed attempt: %v", err)
	}
	if got := list(holdfast.AuditQuery{ShopID: 1, Limit: 10}, nil); len(got) != 0 {
		t.Fatalf("a rolled-back entry is listed: %+v", got)
	}
	before := time.Now().Add(-time.Minute)
	for _, r := range []holdfast.AuditRecord{rec(1, holdfast.AuditStockSet), rec(1, holdfast.AuditHoldCancel), rec(2, holdfast.AuditStockSet),
		{ShopID: 1, Action: holdfast.AuditStockAdjust, Actor: holdfast.Actor{Via: "cli"}, Detail: []byte(`{}`)}} {
		if err := write(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	all := list(holdfast.AuditQuery{ShopID: 1, Limit: 10}, nil)
	if len(all) != 3 || all[0].Action != holdfast.AuditStockAdjust || all[2].Action != holdfast.AuditStockSet || all[0].ID <= all[1].ID {
		t.Fatalf("shop 1's entries newest first: %+v", all)
	}
	if e := all[0]; e.KeyID != 0 || e.Actor != "cli" || e.Remote != "" || e.RequestID != "" {
		t.Errorf("an entry without a key: %+v", e)
	}
	if e := all[1]; e.KeyID != 5 || e.Actor != "ops" || e.Remote != actor.Remote || e.RequestID != "r-1" || e.ShopID != 1 ||
		string(e.Detail) != `{"n": 1}` && string(e.Detail) != `{"n":1}` || e.CreatedAt.Before(before) {
		t.Errorf("an entry as written: %+v (detail %s)", e, e.Detail)
	}
	if got := list(holdfast.AuditQuery{ShopID: 1, Limit: 1}, nil); len(got) != 2 {
		t.Errorf("limit 1 reads %d, want 2 (one more)", len(got))
	}
	if got := list(holdfast.AuditQuery{ShopID: 1, Limit: 10}, &holdfast.AuditCursor{ID: all[1].ID, ShopID: 1}); len(got) != 1 || got[0].ID != all[2].ID {
		t.Errorf("after the cursor: %+v", got)
	}
	if got := list(holdfast.AuditQuery{ShopID: 1, Action: holdfast.AuditStockSet, Limit: 10}, nil); len(got) != 1 || got[0].ID != all[2].ID {
		t.Errorf("by action: %+v", got)
	}
	if got := list(holdfast.AuditQuery{ShopID: 1, KeyID: 5, Limit: 10}, nil); len(got) != 2 {
		t.Errorf("by key: %+v", got)
	}
	purge := func(retention time.Duration) int {
		t.Helper()
		var n int
		if err := in.Driver.MaintenanceAttempt(ctx, holdfast.RoutePurge, func(tx TTx) error {
			var err error
			n, err = in.Driver.PurgeAuditAttempt(ctx, tx, retention, 2)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := purge(time.Hour); n != 0 {
		t.Fatalf("purge within the retention deleted %d", n)
	}
	if n := purge(time.Microsecond); n != 2 {
		t.Fatalf("purge past the retention, batch 2: %d, want 2", n)
	}
	if n := purge(time.Microsecond); n != 2 {
		t.Fatalf("the second batch: %d, want the last 2", n)
	}
	if got := list(holdfast.AuditQuery{ShopID: 1, Limit: 10}, nil); len(got) != 0 {
		t.Fatalf("after the purges: %+v", got)
	}

	setStock(t, in, key, 3)
	id := uuid.New()
	if _, err := reserve(ctx, in, reservation(id, key, 1)); err != nil {
		t.Fatal(err)
	}
	var now time.Time
	var hash []byte
	var errNone error
	err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteRead, func(tx TTx) error {
		var err error
		if now, err = in.Driver.ReadNow(ctx, tx); err != nil {
			return err
		}
		if hash, err = in.Driver.BuyerOf(ctx, tx, holdfast.RouteRelease, key.ShopID, id); err != nil {
			return err
		}
		_, errNone = in.Driver.BuyerOf(ctx, tx, holdfast.RouteRelease, key.ShopID, uuid.New())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(now); d < -time.Minute || d > time.Minute {
		t.Errorf("ReadNow %v, %v from this host's clock", now, d)
	}
	if hash != nil || !errors.Is(errNone, holdfast.ErrNotFound) {
		t.Errorf("BuyerOf: a hold without a buyer %x; no hold %v (want nil and ErrNotFound)", hash, errNone)
	}
}
