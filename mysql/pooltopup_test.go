package mysql_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// refillLog is an Observer that counts refills, inline and background.
type refillLog struct {
	counting
	inline, background atomic.Int64
}

func (r *refillLog) Replenished(_ holdfast.Key, inline bool, _ int) {
	if inline {
		r.inline.Add(1)
	} else {
		r.background.Add(1)
	}
}

// TestPoolTopUpBeforeDry (#29 item 4), as on PostgreSQL: reservations
// inside callers' transactions that take a quarter of a pool key's cap
// wake the replenisher, which tops the pool up to its cap in its own
// transaction long before ReplenishInterval — whatever the low-water mark,
// which its walk of the keys waits for (a pool drained by 64 callers'
// transactions passed it on its way to dry): the pool does not run dry,
// so no reserver takes the key's lock row in its caller's transaction (the
// locked path, where the others queue behind each caller's commit).
func TestPoolTopUpBeforeDry(t *testing.T) {
	t.Parallel()
	log := &refillLog{}
	e := newEnv(t, 0, holdfast.Config{Strategy: holdfast.StrategyPool, PoolCap: 8, ReplenishInterval: time.Hour, Observer: log})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 100)
	if _, err := e.c.Replenish(ctx); err != nil {
		t.Fatal(err)
	}
	if l := e.level(k); l.Pooled != 8 {
		t.Fatalf("after the first refill: %+v", l)
	}
	e.c.Start(ctx)
	defer e.c.Stop(ctx) //nolint:errcheck
	before := log.background.Load()
	for i := range 2 { // 2 units: a quarter of the cap, the pool above its low-water mark
		tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
			t.Fatalf("reservation %d: %v", i, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// Above the 6 units the reservations left: the top-up may run while
	// the second one's take is not yet committed, and then refills 7.
	pollUntil(t, "the replenisher to top the pool up", func() bool {
		return log.background.Load() > before && e.level(k).Pooled > 6
	})
	if n := log.inline.Load(); n != 0 {
		t.Fatalf("%d inline refills: a reservation took the slow path", n)
	}
	e.checkInvariant()
}
