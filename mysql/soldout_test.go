package mysql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// TestSoldOutWithoutLocks: a reservation on a key with too few sellable
// units is answered sold out from lock-free reads, not after waiting on the
// key's rows — the seed race's 1,230 late requests then do not queue on the
// counter row behind each other. The key's rows are held by another
// transaction while reservations are made: after a sold-out answer (the
// client's sold-out hint: no row of the key may be waited for; the hint's
// read had been failing on the waitlist's added column since migration 007,
// so every sold-out answer waited for the counter row), and on a fresh
// client with only the key's lock row held (the short fast take answers
// without the slow path's refill). Each must be answered sold out, not
// ErrUnavailable after a lock wait timeout (the clients do not retry).
func TestSoldOutWithoutLocks(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 8, holdfast.Config{})
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			e.stock(k, 3)
			e.strategy(k, s, 50)
			line := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}
			c, err := mysql.New(e.db.DB, holdfast.Config{Now: e.clock.Now, RetryMax: -1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: line}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: line}); !errors.Is(err, holdfast.ErrInsufficientStock) {
				t.Fatalf("second reserve of 2 from 3: %v, want sold out", err)
			}
			// lock holds rows of the key in another transaction until the
			// returned func ends it.
			lock := func(tables ...string) func() {
				tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
				if err != nil {
					t.Fatal(err)
				}
				for _, tbl := range tables {
					rows, err := tx.QueryContext(ctx, "SELECT 1 FROM "+tbl+" WHERE shop_id = 1 AND inventory_item_id = 1 AND location_id = 1 FOR UPDATE")
					if err != nil {
						t.Fatal(err)
					}
					rows.Close()
				}
				return func() { tx.Rollback() } //nolint:errcheck
			}
			reserve := func(name string, cl *mysql.Client) {
				t.Helper()
				if _, err := cl.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: line}); !errors.Is(err, holdfast.ErrInsufficientStock) {
					t.Errorf("%s: reserve of 2 with 1 sellable, the key's rows locked elsewhere: %v, want sold out without waiting", name, err)
				}
			}
			// After a sold-out answer, no row of the key is touched.
			unlock := lock("inventory_locks", "inventory_counters", "inventory_levels")
			reserve("after a sold-out answer", c)
			unlock()
			// On a client that has not seen it sold out, the fast take
			// (which waits for the counter row: the counter's one lock)
			// comes up short, and the slow path's refill, which waits for
			// the key's lock row, is not needed to answer.
			fresh, err := mysql.New(e.db.DB, holdfast.Config{Now: e.clock.Now, RetryMax: -1})
			if err != nil {
				t.Fatal(err)
			}
			unlock = lock("inventory_locks")
			reserve("on a fresh client", fresh)
			unlock()
			e.checkInvariant()
		})
	}
}
