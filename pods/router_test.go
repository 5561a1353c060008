package pods_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pods"
)

// TestRoutesByShop: new shops are placed least-loaded, every operation of a
// shop runs on its pod only, a second router (its own cache) finds the
// first router's shops, unassigned shops are answered without being
// placed, and the invariant check spans the pods.
func TestRoutesByShop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, c := newPod(t, "a", serverA), newPod(t, "b", serverB), newPod(t, "c", serverA)
	m := newMap(t)
	r := newRouter(t, m, pods.Config{}, a, b, c)
	for shop := int64(1); shop <= 3; shop++ {
		stock(t, r, shop, 10)
	}
	want := map[int64]*podDB{1: a, 2: b, 3: c} // least loaded, ties by name
	for shop, p := range want {
		pl, err := m.Lookup(ctx, shop)
		if err != nil || pl.Pod != p.name || pl.Epoch != 1 {
			t.Fatalf("shop %d placed %+v, %v; want pod %s epoch 1", shop, pl, err, p.name)
		}
		for _, q := range []*podDB{a, b, c} {
			lvl, err := q.eng.Level(ctx, key(shop))
			has := err == nil && lvl.Available == 10
			if has != (q == p) {
				t.Fatalf("shop %d on pod %s: level %+v, %v (its pod is %s)", shop, q.name, lvl, err, p.name)
			}
		}
	}
	// A hold made through one router is claimed through another.
	h, err := r.Reserve(ctx, cart(2))
	if err != nil {
		t.Fatal(err)
	}
	r2 := newRouter(t, m, pods.Config{}, a, b, c)
	if got, err := r2.Claim(ctx, 2, h.CheckoutID); err != nil || got.Status != holdfast.StatusClaimed {
		t.Fatalf("claim through the second router: %+v, %v", got, err)
	}
	if got, err := b.eng.Hold(ctx, 2, h.CheckoutID); err != nil || got.Status != holdfast.StatusClaimed {
		t.Fatalf("the hold on pod b: %+v, %v", got, err)
	}
	// Reads and lifecycle calls of an unknown shop answer as for a shop
	// with nothing, and do not place it.
	if _, err := r.Hold(ctx, 99, h.CheckoutID); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("hold of an unknown shop: %v, want ErrNotFound", err)
	}
	if _, err := r.Claim(ctx, 99, h.CheckoutID); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("claim of an unknown shop: %v, want ErrNotFound", err)
	}
	if _, err := m.Lookup(ctx, 99); !errors.Is(err, pods.ErrUnassigned) {
		t.Fatalf("shop 99 after reads: %v, want ErrUnassigned", err)
	}
	// Bad input is still the engine's typed error.
	var ae *holdfast.ArgumentError
	if _, err := r.Reserve(ctx, holdfast.ReserveParams{ShopID: 0}); !errors.As(err, &ae) {
		t.Fatalf("reserve of shop 0: %v, want an ArgumentError", err)
	}
	rep, err := r.CheckInvariant(ctx)
	if err != nil || !rep.OK() || rep.Keys != 3 {
		t.Fatalf("invariant over the pods: %+v, %v; want 3 keys, OK", rep, err)
	}
	infos, err := m.Pods(ctx)
	if err != nil || len(infos) != 3 || infos[0].Shops != 1 || infos[1].Shops != 1 || infos[2].Shops != 1 {
		t.Fatalf("pods: %+v, %v", infos, err)
	}
}

// TestDefaultPodPolicy: with a default pod every new shop goes there; a
// pod that stops accepting new shops gets none under least-loaded.
func TestDefaultPodPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newPod(t, "a", serverA), newPod(t, "b", serverB)
	m := newMap(t)
	r := newRouter(t, m, pods.Config{DefaultPod: "b"}, a, b)
	for shop := int64(1); shop <= 3; shop++ {
		stock(t, r, shop, 1)
	}
	if err := m.SetAcceptsNew(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	ll := newRouter(t, m, pods.Config{}, a, b)
	stock(t, ll, 4, 1) // a has 0 shops but does not accept new ones
	for shop := int64(1); shop <= 4; shop++ {
		if pl, err := m.Lookup(ctx, shop); err != nil || pl.Pod != "b" {
			t.Fatalf("shop %d: %+v, %v; want pod b", shop, pl, err)
		}
	}
	if err := m.SetAcceptsNew(ctx, "nope", false); !errors.Is(err, pods.ErrUnknownPod) {
		t.Fatalf("unknown pod: %v", err)
	}
}

// TestNewRefusesUnconfiguredPod: a map with shops on a pod the router is
// not given is a configuration error, not shops with nowhere to go.
func TestNewRefusesUnconfiguredPod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newPod(t, "a", serverA), newPod(t, "b", serverB)
	m := newMap(t)
	newRouter(t, m, pods.Config{}, a, b)
	if _, err := m.Assign(ctx, 7, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Assign(ctx, 8, "zz"); !errors.Is(err, pods.ErrUnknownPod) {
		t.Fatalf("assign to an unregistered pod: %v", err)
	}
	_, err := pods.New(ctx, m, []pods.Pod{a.pod()}, pods.Config{})
	if !errors.Is(err, pods.ErrUnknownPod) {
		t.Fatalf("router without pod b: %v, want ErrUnknownPod", err)
	}
}

// TestCacheStaleness: a switch made elsewhere is seen after the TTL, at
// once after Invalidate; a map that cannot be read is answered from a
// cached placement up to StaleMax, then unavailable.
func TestCacheStaleness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newPod(t, "a", serverA), newPod(t, "b", serverB)
	m := newMap(t)
	now := time.Now()
	clock := func() time.Time { return now }
	r := newRouter(t, m, pods.Config{CacheTTL: time.Second, StaleMax: time.Minute, Now: clock, FollowInterval: -1}, a, b)
	stock(t, r, 5, 1)
	pl, err := r.Placement(ctx, 5)
	if err != nil || pl.Pod != "a" {
		t.Fatalf("placement: %+v, %v", pl, err)
	}
	if _, err := m.Switch(ctx, 5, "b", pl.Epoch, "a"); !errors.Is(err, pods.ErrPlacementChanged) {
		t.Fatalf("switch from the wrong pod: %v", err)
	}
	if _, err := m.Switch(ctx, 5, "a", pl.Epoch, "b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Placement(ctx, 5); got.Pod != "a" {
		t.Fatalf("within the TTL: %+v, want the cached pod a", got)
	}
	r.Invalidate(5)
	if got, _ := r.Placement(ctx, 5); got.Pod != "b" || got.Epoch != 2 {
		t.Fatalf("after Invalidate: %+v, want pod b epoch 2", got)
	}
	if _, err := m.Switch(ctx, 5, "b", 2, "a"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(1500 * time.Millisecond)
	if got, _ := r.Placement(ctx, 5); got.Pod != "a" || got.Epoch != 3 {
		t.Fatalf("after the TTL: %+v, want pod a epoch 3", got)
	}
	// The control database goes away: the cached placement serves until
	// StaleMax, then the shop is unavailable (never routed by guess).
	m.Pool().Close()
	now = now.Add(30 * time.Second)
	if got, err := r.Placement(ctx, 5); err != nil || got.Pod != "a" {
		t.Fatalf("stale within StaleMax: %+v, %v", got, err)
	}
	now = now.Add(time.Minute)
	if _, err := r.Level(ctx, key(5)); !errors.Is(err, holdfast.ErrUnavailable) {
		t.Fatalf("past StaleMax without a map: %v, want ErrUnavailable", err)
	}
}

// TestFollowsSwitches: a switch made anywhere (here, on the map directly,
// as a move run by another process would) reaches every router within
// about FollowInterval, long before its cache's TTL, without Invalidate.
func TestFollowsSwitches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newPod(t, "a", serverA), newPod(t, "b", serverB)
	m := newMap(t)
	cfg := pods.Config{CacheTTL: pods.CacheTTLMax, FollowInterval: 200 * time.Millisecond}
	r1, r2 := newRouter(t, m, cfg, a, b), newRouter(t, m, cfg, a, b)
	stock(t, r1, 9, 3)
	for _, r := range []*pods.Router{r1, r2} {
		if pl, err := r.Placement(ctx, 9); err != nil || pl.Pod != "a" {
			t.Fatalf("placement: %+v, %v", pl, err)
		}
	}
	switched := time.Now()
	if _, err := m.Switch(ctx, 9, "a", 1, "b"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*pods.Router{r1, r2} {
		for {
			pl, err := r.Placement(ctx, 9)
			if err != nil {
				t.Fatal(err)
			}
			if pl.Pod == "b" && pl.Epoch == 2 {
				break
			}
			if time.Since(switched) > 10*time.Second {
				t.Fatalf("a router still routes shop 9 to %s %v after the switch (TTL %v)", pl.Pod, time.Since(switched), pods.CacheTTLMax)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("both routers followed the switch within %v", time.Since(switched).Round(time.Millisecond))
}
