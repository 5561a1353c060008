package shadow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/shadow"
)

var errCrash = errors.New("injected crash")

// TestReconcileFindsCrashDrift: in shadow, a legacy claim crashes between
// its ledger write and its Redis cleanup. The caller is told the claim
// failed (the legacy is the truth), holdfast claimed; once the legacy's hold
// expires, its unit is back on sale in Redis although it was sold, and
// Reconcile lists the key with that cause.
func TestReconcileFindsCrashDrift(t *testing.T) {
	t.Parallel()
	var crashID uuid.UUID
	r := newRigWith(t, func(c *lredis.Config) {
		c.BetweenSteps = func(_ int64, id uuid.UUID) error {
			if id == crashID {
				return errCrash
			}
			return nil
		}
	}, nil)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 5, ItemID: 2, LocationID: 3}
	if err := r.sh.Enroll(ctx, k.ShopID); err != nil {
		t.Fatal(err)
	}
	r.stock(t, k, 10)
	if err := r.sh.SetMode(ctx, k.ShopID, shadow.ModeShadow, "test"); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(lifetime + time.Second)
	crashID = uuid.New()
	if _, err := r.sh.Reserve(ctx, holdfast.ReserveParams{ShopID: k.ShopID, CheckoutID: crashID, TTL: time.Minute,
		Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.sh.Claim(ctx, k.ShopID, crashID); !errors.Is(err, errCrash) {
		t.Fatalf("claim through a crashing legacy: %v, want the crash", err)
	}
	rec, err := r.sh.Reconcile(ctx, k.ShopID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Drift) != 0 {
		t.Fatalf("before the legacy hold expires: drift %+v, want none", rec.Drift)
	}
	r.clock.Advance(2 * time.Minute)
	if n, err := r.store.ExpireOnce(ctx); err != nil || n != 1 {
		t.Fatalf("legacy expiry: %d, %v", n, err)
	}
	rec, err = r.sh.Reconcile(ctx, k.ShopID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Drift) != 1 {
		t.Fatalf("drift %+v, want the key", rec.Drift)
	}
	d := rec.Drift[0]
	t.Logf("%+v", d)
	if d.Key != k || d.LegacyOnHand != 9 || d.LegacyReservable != 10 || d.Available != 9 || d.Sellable != 9 ||
		!strings.Contains(d.Cause, "expiry gave back units of a claimed hold") {
		t.Fatalf("drift %+v", d)
	}
	if _, err := r.sh.Reconcile(ctx, 999); !errors.Is(err, shadow.ErrUnknownShop) {
		t.Fatalf("unknown shop: %v", err)
	}
}
