package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
)

// TestInvariantScalesWithHolds: CheckInvariant's structural check of holds
// against their lines is linear in the held holds, not quadratic: with
// 30,000 held holds of one shop it answers within seconds. Its correlated
// count of each hold's lines scanned the shop's lines per hold (30,000²
// rows, minutes): the bench's batch run, whose audit ran it after about as
// many holds, outlived its 30 s context, and the statement, which the
// driver does not kill on cancel, held its tables' metadata locks for
// minutes more, stalling the DROP DATABASE of the run and the next run
// (issue 24 item 8: `context deadline exceeded` after 3–3.5 minutes).
func TestInvariantScalesWithHolds(t *testing.T) {
	t.Parallel()
	const holds = 30000
	e := newEnv(t, 4, holdfast.Config{})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 2*holds)
	for _, q := range []string{
		`INSERT INTO holds (shop_id, checkout_id, status, cart, created_at, expires_at, deadline)
		 SELECT 1, UNHEX(MD5(seq)), 'held', '[{"item_id":1,"location_id":1,"quantity":1}]', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 1 HOUR, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR
		 FROM seq_1_to_30000`,
		`INSERT INTO reserved_quantities (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at)
		 SELECT 1, 1, 1, UNHEX(MD5(seq)), 1, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR FROM seq_1_to_30000`,
	} {
		if _, err := e.db.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	const bound = 20 * time.Second
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	start := time.Now()
	rep, err := e.c.CheckInvariant(cctx)
	if err != nil {
		t.Fatalf("CheckInvariant over %d held holds: %v after %v (bound %v)", holds, err, time.Since(start).Round(time.Millisecond), bound)
	}
	if len(rep.Defects) != 0 {
		t.Fatalf("defects: %v", rep.Defects[:min(3, len(rep.Defects))])
	}
	t.Logf("CheckInvariant over %d held holds took %v", holds, time.Since(start).Round(time.Millisecond))
}
