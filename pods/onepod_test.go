package pods_test

import (
	"context"
	"testing"
	"time"

	"github.com/holdfast/holdfast/pods"
)

// TestReservationTouchesOnePod counts transactions on the database side
// (pg_stat_database, read from another database): reservations, claims and
// releases of a shop on pod b commit on pod b's database only; pods a and c
// (one on the same server as the control database) see none. The count is
// shown to see activity: a reservation of a shop on pod a shows up on a.
func TestReservationTouchesOnePod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, c := newPod(t, "a", serverA), newPod(t, "b", serverB), newPod(t, "c", serverA)
	r := newRouter(t, newMap(t), pods.Config{}, a, b, c)
	for shop := int64(1); shop <= 3; shop++ {
		stock(t, r, shop, 1000) // shop 1 on a, 2 on b, 3 on c
	}
	// Warm the router's cache, then flush every pod backend's statistics
	// (a backend reports them when it exits) before the baseline.
	if _, err := r.Placement(ctx, 2); err != nil {
		t.Fatal(err)
	}
	flush := func() {
		for _, p := range []*podDB{a, b, c} {
			p.pool.Reset()
		}
	}
	flush()
	all := []*podDB{a, b, c}
	settled := func() map[string]int64 {
		// Poll until two reads a stats interval apart agree.
		prev := map[string]int64{}
		for i := 0; ; i++ {
			cur := map[string]int64{}
			for _, p := range all {
				cur[p.name] = p.srv.xacts(t, p.dbName)
			}
			if i > 0 && equal(prev, cur) {
				return cur
			}
			if i > 50 {
				t.Fatalf("pg_stat_database did not settle: %v then %v", prev, cur)
			}
			prev = cur
			time.Sleep(200 * time.Millisecond)
		}
	}
	before := settled()
	const n = 40
	for i := range n {
		h, err := r.Reserve(ctx, cart(2))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			_, err = r.Claim(ctx, 2, h.CheckoutID)
		} else {
			_, err = r.Release(ctx, 2, h.CheckoutID)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	flush()
	// Wait for b's count to show the work, then compare.
	var after map[string]int64
	deadline := time.Now().Add(20 * time.Second)
	for {
		after = settled()
		if after["b"]-before["b"] >= 2*n || time.Now().After(deadline) {
			break
		}
	}
	d := map[string]int64{}
	for _, p := range all {
		d[p.name] = after[p.name] - before[p.name]
	}
	t.Logf("table accesses per pod for %d reservations + %d claims/releases of shop 2 (pod b): %v", n, n, d)
	if d["b"] < 2*n {
		t.Fatalf("pod b shows %d table accesses for %d operations: the count does not see them", d["b"], 2*n)
	}
	if d["a"] != 0 || d["c"] != 0 {
		t.Fatalf("pods a and c show %d and %d table accesses for shop 2's operations, want 0", d["a"], d["c"])
	}
	// The count sees the other pods too.
	if _, err := r.Reserve(ctx, cart(1)); err != nil {
		t.Fatal(err)
	}
	flush()
	deadline = time.Now().Add(20 * time.Second)
	for {
		got := settled()
		if got["a"] > after["a"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a reservation of shop 1 never showed on pod a's count")
		}
	}
}

func equal(x, y map[string]int64) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if y[k] != v {
			return false
		}
	}
	return true
}
