package pods_test

import (
	"context"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/pods"
)

// TestMixedEngines: the router is engine-neutral — one pod on PostgreSQL,
// one on MariaDB, shops on each trade through it, each shop's rows only on
// its own pod, and the invariant check spans both engines.
func TestMixedEngines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := newPod(t, "a-pg", serverA)
	mdb := mysqltest.DB(t, 8)
	my, err := mysql.New(mdb.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := newMap(t)
	r, err := pods.New(ctx, m, []pods.Pod{pg.pod(), {Name: "b-maria", Engine: my, Ping: mdb.DB.PingContext}}, pods.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	stock(t, r, 1, 5) // least loaded: a-pg
	stock(t, r, 2, 5) // then b-maria
	for shop, eng := range map[int64]holdfast.Engine{1: pg.eng, 2: my} {
		h, err := r.Reserve(ctx, cart(shop))
		if err != nil {
			t.Fatalf("reserve shop %d: %v", shop, err)
		}
		if _, err := r.Claim(ctx, shop, h.CheckoutID); err != nil {
			t.Fatalf("claim shop %d: %v", shop, err)
		}
		// The pod's own engine has it; the other does not.
		if got, err := eng.Hold(ctx, shop, h.CheckoutID); err != nil || got.Status != holdfast.StatusClaimed {
			t.Fatalf("shop %d on its pod: %+v, %v", shop, got, err)
		}
		other := holdfast.Engine(my)
		if eng == holdfast.Engine(my) {
			other = pg.eng
		}
		if lvl, err := other.Level(ctx, key(shop)); err == nil && lvl.Available != 0 {
			t.Fatalf("shop %d has stock on the other pod: %+v", shop, lvl)
		}
		if lvl, err := r.Level(ctx, key(shop)); err != nil || lvl.Available != 4 {
			t.Fatalf("shop %d level through the router: %+v, %v; want 4 available", shop, lvl, err)
		}
	}
	if pl, err := m.Lookup(ctx, 2); err != nil || pl.Pod != "b-maria" {
		t.Fatalf("shop 2: %+v, %v", pl, err)
	}
	rep, err := r.CheckInvariant(ctx)
	if err != nil || !rep.OK() || rep.Keys != 2 {
		t.Fatalf("invariant over both engines: %+v, %v", rep, err)
	}
}
