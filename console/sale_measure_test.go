package console_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestShopSettingsCost measures the shop page's read of its drop and
// pre-order settings (Engine.Audit by action, SettingsShown rows) on a
// shop whose audit log holds many other entries and a few settings at
// its oldest end: the read walks the shop's log newest first. It runs only
// with HOLDFAST_MEASURE=1 and asserts nothing about the times.
//
//	HOLDFAST_MEASURE=1 go test -count=1 -run TestShopSettingsCost -v ./console/
func TestShopSettingsCost(t *testing.T) {
	if os.Getenv("HOLDFAST_MEASURE") == "" {
		t.Skip("set HOLDFAST_MEASURE=1 to measure")
	}
	db := pgtest.DB(t, 4)
	hc, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := hc.SetDrop(ctx, holdfast.DropParams{Key: k, StartsAt: time.Now().Add(time.Hour), Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range []int{10_000, 90_000, 900_000} {
		// Other entries of the shop, newer than the drop's (as a busy
		// shop's stock changes and cancels would be).
		if _, err := db.Pool.Exec(ctx, `INSERT INTO audit_log (shop_id, action, actor, detail)
			SELECT 1, 'stock.adjust', 'library', '{"item_id": 2, "location_id": 1, "delta": 1}'::jsonb FROM generate_series(1, $1::int)`, n); err != nil {
			t.Fatal(err)
		}
		total += n
		if _, err := db.Pool.Exec(ctx, `ANALYZE audit_log`); err != nil {
			t.Fatal(err)
		}
		var times []time.Duration
		for range 5 {
			start := time.Now()
			page, err := hc.Audit(ctx, holdfast.AuditQuery{ShopID: 1, Action: holdfast.AuditDropSet, Limit: 10})
			if err != nil || len(page.Entries) != 1 {
				t.Fatalf("audit: %v %+v", err, page)
			}
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		t.Logf("%d other entries: drop.set read median %v, max %v", total, times[2], times[4])
	}
}
