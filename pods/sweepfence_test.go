package pods_test

import (
	"context"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgmove"
)

// TestSweepSkipsFencedShop: while a move fences one shop of a pod, the
// pod's sweep expires the other shops' lapsed holds and leaves the fenced
// shop's for later — before, the batch that reached the fenced shop's
// holds was refused as a whole (HF001) and retried, so every shop's
// expiries waited out the fence.
func TestSweepSkipsFencedShop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newPodWith(t, "a", serverA, holdfast.Config{})
	var ids [3]string
	for shop := int64(1); shop <= 2; shop++ {
		stock(t, a.eng, shop, 5)
		p := cart(shop)
		if _, err := a.eng.Reserve(ctx, p); err != nil {
			t.Fatal(err)
		}
		ids[shop] = p.CheckoutID.String()
	}
	// Both lapsed (set before the fence: the guard refuses shop 1's writes
	// under it).
	if _, err := a.pool.Exec(ctx, "UPDATE holds SET expires_at = clock_timestamp() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	f, err := pgmove.New(a.pool).Fence(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Before the fix the sweep retried the refused batch until the fence
	// ended: bounded here, so that fails rather than hangs.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := a.eng.SweepOnce(sctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep with shop 1 fenced: %d, %v; want shop 2's one hold expired", n, err)
	}
	status := func(shop int64) string {
		var s string
		if err := a.pool.QueryRow(ctx, "SELECT status FROM holds WHERE shop_id = $1 AND checkout_id = $2", shop, ids[shop]).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s1, s2 := status(1), status(2); s1 != "held" || s2 != "expired" {
		t.Fatalf("under the fence: shop 1's hold %s, shop 2's %s; want held, expired", s1, s2)
	}
	if err := f.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := a.eng.SweepOnce(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after the fence: %d, %v; want shop 1's hold expired", n, err)
	}
	if s := status(1); s != "expired" {
		t.Fatalf("after the fence: shop 1's hold %s, want expired", s)
	}
	checkInvariant(t, "a", a.eng)
}
