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
// inside callers' transactions wake the replenisher every quarter of a pool
// key's cap they take, long before ReplenishInterval, and it tops the pool
// up in its own transaction once the pool is below its low-water mark
// (this driver's replenisher walks the keys and refills pools only below
// it): the pool does not run dry, so no reserver takes the key's lock row
// in its caller's transaction (the locked path, where the others queue
// behind each caller's commit).
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
	// The whole cap, a unit each: a quarter of it asks for a top-up every
	// second reservation; the eighth asks with seven committed, the pool
	// below its low-water mark (30%) as the replenisher reads it.
	for i := range 8 {
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
	pollUntil(t, "the replenisher to top the pool up", func() bool {
		return log.background.Load() > before
	})
	if l := e.level(k); l.Pooled < 3 {
		t.Errorf("after the top-up: %+v", l)
	}
	if n := log.inline.Load(); n != 0 {
		t.Fatalf("%d inline refills: a reservation took the slow path", n)
	}
	e.checkInvariant()
}
