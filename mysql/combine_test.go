package mysql_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestCombinedHoldAsStored: a combined batch answers each hold it grants
// without reading it back (combine.go computes the times from the batch's
// one clock reading), so each answer must equal the hold as stored (times,
// lines), and each hold's reserved line must carry its key, quantity and
// expiry; with the database's clock and with an injected one, and TTLs
// that are not whole microseconds.
func TestCombinedHoldAsStored(t *testing.T) {
	t.Parallel()
	for _, injected := range []bool{false, true} {
		t.Run(map[bool]string{false: "database clock", true: "injected clock"}[injected], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := mysqltest.DB(t, 4)
			cfg := holdfast.Config{}
			if injected {
				at := time.Date(2026, 12, 3, 8, 0, 0, 123456789, time.UTC)
				cfg.Now = func() time.Time { return at }
			}
			c, err := mysql.New(db.DB, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Stop(context.Background()) })
			k := holdfast.Key{ShopID: 3, ItemID: 7, LocationID: 2}
			if _, err := c.SetStrategy(ctx, k, holdfast.StrategyBatch, 0); err != nil {
				t.Fatal(err)
			}
			n := 10
			if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
			var reqs []*hfdriver.Reservation
			for i, ttl := range []time.Duration{time.Minute, 90*time.Second + 1234*time.Nanosecond, 7 * time.Minute} {
				lines := []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: i + 1}}
				raw, _ := json.Marshal(lines)
				reqs = append(reqs, &hfdriver.Reservation{Shop: k.ShopID, Checkout: uuid.New(), Lines: lines, LinesRaw: raw, TTL: ttl})
			}
			d := mysql.DriverOf(c)
			var got []*holdfast.Hold
			for range 3 { // a deadlock or lost connection is the engine's to retry
				if got, _, err = d.CombinedAttempt(ctx, reqs, 0); err == nil || !d.Retryable(err) {
					break
				}
			}
			if err != nil || len(got) != len(reqs) {
				t.Fatalf("CombinedAttempt: %v, %v", got, err)
			}
			for i, h := range got {
				if h == nil {
					t.Fatalf("request %d not granted", i)
				}
				stored, err := c.Hold(ctx, k.ShopID, reqs[i].Checkout)
				if err != nil {
					t.Fatal(err)
				}
				if !h.CreatedAt.Equal(stored.CreatedAt) || !h.ExpiresAt.Equal(stored.ExpiresAt) || !h.Deadline.Equal(stored.Deadline) {
					t.Errorf("hold %d answered created %v expires %v deadline %v; stored %v, %v, %v",
						i, h.CreatedAt, h.ExpiresAt, h.Deadline, stored.CreatedAt, stored.ExpiresAt, stored.Deadline)
				}
				if want := h.CreatedAt.Add(reqs[i].TTL.Truncate(time.Microsecond)); !h.ExpiresAt.Equal(want) {
					t.Errorf("hold %d expires %v, want created + TTL %v", i, h.ExpiresAt, want)
				}
				if injected && !h.CreatedAt.Equal(cfg.Now().Truncate(time.Microsecond)) {
					t.Errorf("hold %d created %v, want the injected clock's %v", i, h.CreatedAt, cfg.Now())
				}
				if h.Status != holdfast.StatusHeld || h.CheckoutID != stored.CheckoutID || h.ShopID != stored.ShopID ||
					len(h.Lines) != 1 || len(stored.Lines) != 1 || h.Lines[0] != stored.Lines[0] || h.Revision != stored.Revision {
					t.Errorf("hold %d answered %+v; stored %+v", i, h, stored)
				}
				var item, loc int64
				var qty int
				var exp time.Time
				if err := db.DB.QueryRow("SELECT inventory_item_id, location_id, quantity, expires_at FROM reserved_quantities WHERE shop_id = ? AND checkout_id = ?",
					k.ShopID, reqs[i].Checkout[:]).Scan(&item, &loc, &qty, &exp); err != nil {
					t.Fatalf("hold %d's reserved line: %v", i, err)
				}
				if item != k.ItemID || loc != k.LocationID || qty != i+1 || !exp.Equal(stored.ExpiresAt) {
					t.Errorf("hold %d's line: item %d location %d quantity %d expires %v; want %d %d %d %v", i, item, loc, qty, exp, k.ItemID, k.LocationID, i+1, stored.ExpiresAt)
				}
			}
			if lv, err := c.Level(ctx, k); err != nil || lv.Held != 6 {
				t.Fatalf("level: %+v, %v; want 6 held", lv, err)
			}
		})
	}
}
