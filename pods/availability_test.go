package pods_test

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pods"
)

// TestAvailabilityRoutesByShop: availability is read on the shop's pod; a
// shop no pod holds reads as never stocked and is not placed by the read;
// a bad query is the engine's typed error.
func TestAvailabilityRoutesByShop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newPod(t, "a", serverA), newPod(t, "b", serverB)
	m := newMap(t)
	r := newRouter(t, m, pods.Config{}, a, b)
	stock(t, r, 1, 10) // pod a
	stock(t, r, 2, 4)  // pod b
	q := func(shop int64) holdfast.AvailabilityQuery {
		return holdfast.AvailabilityQuery{ShopID: shop, Items: []int64{1}, Locations: []int64{1}}
	}
	for shop, want := range map[int64]int{1: 10, 2: 4} {
		got, err := r.Availability(ctx, q(shop))
		if err != nil || got.Items[0].Sellable != want {
			t.Fatalf("shop %d: %+v %v, want %d", shop, got, err, want)
		}
	}
	if got, err := r.Availability(ctx, q(99)); err != nil || !got.Items[0].NotStocked {
		t.Fatalf("unknown shop: %+v %v, want not stocked", got, err)
	}
	if _, err := m.Lookup(ctx, 99); !errors.Is(err, pods.ErrUnassigned) {
		t.Fatalf("shop 99 after a read: %v, want ErrUnassigned", err)
	}
	var ae *holdfast.ArgumentError
	if _, err := r.Availability(ctx, holdfast.AvailabilityQuery{ShopID: 1}); !errors.As(err, &ae) || ae.Field != "items" {
		t.Fatalf("no items: %v, want an *ArgumentError on items", err)
	}
}
