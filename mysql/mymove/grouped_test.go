package mymove_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast/mysql/mymove"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestCopyKeepsGroupedEvents: a combined batch's hold.created row covers n
// cursors and keeps its holds in grouped, and the holds it covers carry
// grouped_event (migration 23); a move's copy keeps all three as they are,
// or the target's feed would answer one event where there were n.
func TestCopyKeepsGroupedEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := mysqltest.DB(t, 4), mysqltest.DB(t, 4)
	const shop = 9
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	var grouped string
	for i, id := range ids {
		if _, err := a.DB.ExecContext(ctx, `INSERT INTO holds (shop_id, checkout_id, status, cart, created_at, expires_at, deadline, grouped_event)
			VALUES (?, ?, 'held', '[{"item_id":1,"location_id":1,"quantity":1}]', '2026-12-03 08:00:00', '2026-12-03 08:15:00', '2026-12-04 08:00:00', 1)`, shop, id[:]); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			grouped += ","
		}
		grouped += fmt.Sprintf(`["%X", [{"item_id": 1, "location_id": 1, "quantity": 1}], "2026-12-03 08:15:00.000000"]`, id[:])
	}
	if _, err := a.DB.ExecContext(ctx, `INSERT INTO holdfast_events (shop_id, seq, type, n, grouped, created_at)
		VALUES (?, 1, 'hold.created', 3, ?, '2026-12-03 08:00:00')`, shop, "["+grouped+"]"); err != nil {
		t.Fatal(err)
	}
	src, dst := mymove.New(a.DB), mymove.New(b.DB)
	f, err := src.Fence(ctx, shop)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release(context.Background()) //nolint:errcheck
	if _, err := src.Copy(ctx, f, dst, "a"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT CONCAT_WS('|', seq, n, grouped, checkout_id IS NULL) FROM holdfast_events WHERE shop_id = ? AND type = 'hold.created'",
		"SELECT CONCAT_WS('|', COUNT(*), SUM(grouped_event)) FROM holds WHERE shop_id = ?",
	} {
		var want, got string
		if err := a.DB.QueryRowContext(ctx, q, shop).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if err := b.DB.QueryRowContext(ctx, q, shop).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("copied %q; the source has %q (%s)", got, want, q)
		}
	}
	// The copy of the holds wrote no hold.created of its own.
	var events int
	if err := b.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM holdfast_events WHERE shop_id = ?", shop).Scan(&events); err != nil || events != 1 {
		t.Errorf("the target has %d event rows of the shop (%v), want the one copied", events, err)
	}
}
