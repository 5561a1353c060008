package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestMaintenanceOwnPoolAndPromptExpiry (#10 item 9): every connection of
// the client's pool is taken (checkout traffic at its peak), and the sweep
// interval is an hour; a hold's units still come back right after its
// expiry — the sweeper runs on its own pool and wakes for the nearest
// expiry. Real database clock: the wait is for an event, bounded
// generously, not a measured window.
func TestMaintenanceOwnPoolAndPromptExpiry(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 2)
	c, err := postgres.New(db.Pool, holdfast.Config{SweepInterval: time.Hour, ReplenishInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 5, "stock", ""); err != nil {
		t.Fatal(err)
	}
	c.Start(ctx)
	defer c.Stop(ctx) //nolint:errcheck
	id := uuid.New()
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 2), TTL: holdfast.HoldTTLMin}); err != nil {
		t.Fatal(err)
	}
	var held []*pgxpool.Conn
	for range 2 {
		conn, err := db.Pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
	}
	defer func() {
		for _, conn := range held {
			conn.Release()
		}
	}()
	admin, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	waitFor(t, "the expired hold to be swept", func() bool {
		var status string
		if err := admin.QueryRow(ctx, "SELECT status FROM holds WHERE checkout_id = $1", id).Scan(&status); err != nil {
			t.Fatal(err)
		}
		return status == "expired"
	})
	var held2 int
	if err := admin.QueryRow(ctx, "SELECT coalesce(sum(quantity), 0) FROM reserved_quantities").Scan(&held2); err != nil || held2 != 0 {
		t.Fatalf("units still held: %d %v", held2, err)
	}
}

// TestBackgroundReplenisherRefillsChangedKeys: a release whose refill had
// to skip its key (a ReserveTx held the counter row) queues the key; the
// background replenisher — started with an hour's interval, so on its
// first tick or a later one triggered by nothing but the queue — refills
// it without walking every key.
func TestBackgroundReplenisherRefillsChangedKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyCounter, ReplenishInterval: time.Hour, SweepInterval: time.Hour}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 5)
	id := uuid.New()
	if _, err := reserve(t, e.c, 1, id, one(1, 2)); err != nil {
		t.Fatal(err)
	}
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Release(ctx, 1, id); err != nil {
		t.Fatal(err)
	}
	var queued int
	if err := e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM replenish_queue").Scan(&queued); err != nil || queued != 1 {
		t.Fatalf("queued keys: %d %v", queued, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if l := e.level(k); l.Pooled != 2 {
		t.Fatalf("before the replenisher: %+v", l)
	}
	e.c.Start(ctx)
	defer e.c.Stop(ctx) //nolint:errcheck
	waitFor(t, "the replenisher to refill the queued key", func() bool { return e.level(k).Pooled == 4 })
}
