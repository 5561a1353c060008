package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres/pgstore"
)

// TestClientCancelAndAudit: an admin key cancels an item's holds and reads
// the audit log (the stock change and the cancel, newest first); a shop
// key is refused; a cancel without a reason names its field.
func TestClientCancelAndAudit(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 9, LocationID: 1}
	if _, err := hc.Adjust(ctx, k, 10, "test", ""); err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	if _, err := hc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, TTL: time.Minute,
		Lines: []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 3}}}); err != nil {
		t.Fatal(err)
	}
	admin, _, err := httpapi.CreateKey(ctx, pgstore.Service(hc.Pool()), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	var ae *client.Error
	if _, err := client.New(url, key).CancelHolds(ctx, holdfast.CancelParams{ShopID: 1, ItemID: 9, Reason: "recall"}); !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("a shop key: %v", err)
	}
	if _, err := client.New(url, admin).CancelHolds(ctx, holdfast.CancelParams{ShopID: 1, ItemID: 9}); !errors.As(err, &ae) || ae.Field != "reason" {
		t.Fatalf("no reason: %v", err)
	}
	r, err := client.New(url, admin).CancelHolds(ctx, holdfast.CancelParams{ShopID: 1, ItemID: 9, Reason: "recall"})
	if err != nil || len(r.Cancelled) != 1 || r.Cancelled[0].CheckoutID != id || len(r.Units) != 1 || r.Units[0].Units != 3 || r.More {
		t.Fatalf("cancel: %+v %v", r, err)
	}
	page, err := client.New(url, admin).Audit(ctx, holdfast.AuditQuery{ShopID: 1, Limit: 1})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Action != holdfast.AuditHoldCancel || page.Next == "" {
		t.Fatalf("audit page 1: %+v %v", page, err)
	}
	page, err = client.New(url, admin).Audit(ctx, holdfast.AuditQuery{ShopID: 1, Limit: 1, After: page.Next})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Action != holdfast.AuditStockAdjust {
		t.Fatalf("audit page 2: %+v %v", page, err)
	}
}
