package pods_test

import (
	"context"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pods"
)

// TestAdminCancelAndAuditByShop: the router sends a shop's admin cancel
// and audit reads to the shop's pod, and only there.
func TestAdminCancelAndAuditByShop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newPod(t, "a", serverA), newPod(t, "b", serverB)
	m := newMap(t)
	r := newRouter(t, m, pods.Config{}, a, b)
	stock(t, r, 1, 10) // pod a
	stock(t, r, 2, 10) // pod b
	h, err := r.Reserve(ctx, cart(2))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.CancelHolds(ctx, holdfast.CancelParams{ShopID: 2, ItemID: 1, Reason: "recall"})
	if err != nil || len(res.Cancelled) != 1 || res.Cancelled[0].CheckoutID != h.CheckoutID {
		t.Fatalf("cancel through the router: %+v, %v", res, err)
	}
	if got, err := b.eng.Hold(ctx, 2, h.CheckoutID); err != nil || got.Status != holdfast.StatusReleased {
		t.Fatalf("the hold on pod b: %+v, %v", got, err)
	}
	page, err := r.Audit(ctx, holdfast.AuditQuery{ShopID: 2})
	if err != nil || len(page.Entries) != 2 || page.Entries[0].Action != holdfast.AuditHoldCancel || page.Entries[1].Action != holdfast.AuditStockSet {
		t.Fatalf("shop 2's audit through the router: %+v, %v", page, err)
	}
	if page, err := a.eng.Audit(ctx, holdfast.AuditQuery{ShopID: 2}); err != nil || len(page.Entries) != 0 {
		t.Fatalf("shop 2's audit on pod a: %+v, %v; want none", page, err)
	}
	if page, err := r.Audit(ctx, holdfast.AuditQuery{ShopID: 1}); err != nil || len(page.Entries) != 1 {
		t.Fatalf("shop 1's audit: %+v, %v", page, err)
	}
}
