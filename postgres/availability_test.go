package postgres_test

import (
	"context"
	"testing"

	"github.com/holdfast/holdfast"
)

// TestAvailabilityGenericPlanStaysLocal: the availability read runs with
// its generic plan (plan_cache_mode set for its own implicit transaction
// only): on a pool of one connection, the connection's next statement sees
// the server's setting again, after a read that answered and after one
// that failed.
func TestAvailabilityGenericPlanStaysLocal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{}, 1)
	ctx := context.Background()
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 5)
	mode := func() string {
		t.Helper()
		var m string
		if err := e.db.Pool.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	was := mode()
	for range 8 { // beyond the 5 custom plans a prepared statement starts with
		a, err := e.c.Availability(ctx, holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{1}, Locations: []int64{1}})
		if err != nil || a.Items[0].Sellable != 5 {
			t.Fatalf("availability: %+v %v", a, err)
		}
		if got := mode(); got != was {
			t.Fatalf("after a read the connection's plan_cache_mode is %q, was %q", got, was)
		}
	}
	// A read the server refuses (a canceled context aborts it) leaves it
	// too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.c.Availability(cctx, holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{1}, Locations: []int64{1}}); err == nil {
		t.Fatal("a read with a canceled context answered")
	}
	if got := mode(); got != was {
		t.Fatalf("after a failed read the connection's plan_cache_mode is %q, was %q", got, was)
	}
}
