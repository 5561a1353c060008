package holdfast_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestCheckoutIDsPerShop: checkout ids are scoped per shop (#10 item 8).
// Two shops using the same id have two independent checkouts — different
// lines, each claimed, released, extended and read on its own — and one
// shop's use of an id is never visible to the other as a conflict.
func TestCheckoutIDsPerShop(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 20}, 0)
			ctx := context.Background()
			k1 := holdfast.Key{ShopID: 1, ItemID: 5, LocationID: 1}
			k2 := holdfast.Key{ShopID: 2, ItemID: 5, LocationID: 1}
			e.stock(k1, 10)
			e.stock(k2, 10)
			id := uuid.New()
			if _, err := reserve(t, e.c, 1, id, one(5, 3)); err != nil {
				t.Fatal(err)
			}
			h2, err := reserve(t, e.c, 2, id, one(5, 4))
			if err != nil || h2.Replayed || h2.ShopID != 2 {
				t.Fatalf("shop 2, same id, other lines: %+v %v", h2, err)
			}
			if l := e.level(k1); l.Held != 3 {
				t.Fatalf("shop 1: %+v", l)
			}
			if l := e.level(k2); l.Held != 4 {
				t.Fatalf("shop 2: %+v", l)
			}
			if _, err := e.c.Extend(ctx, 2, id, holdfast.HoldTTLDefault); err != nil {
				t.Fatal(err)
			}
			if h, err := e.c.Claim(ctx, 1, id); err != nil || h.Lines[0].Quantity != 3 {
				t.Fatalf("claim shop 1: %+v %v", h, err)
			}
			if h, err := e.c.Hold(ctx, 2, id); err != nil || h.Status != holdfast.StatusHeld || h.Lines[0].Quantity != 4 {
				t.Fatalf("shop 2 after shop 1 claimed: %+v %v", h, err)
			}
			if h, err := e.c.Release(ctx, 2, id); err != nil || h.Status != holdfast.StatusReleased {
				t.Fatalf("release shop 2: %+v %v", h, err)
			}
			if l := e.level(k1); l.Available != 7 || l.Held != 0 {
				t.Fatalf("shop 1 after claim: %+v", l)
			}
			if l := e.level(k2); l.Available != 10 || l.Held != 0 {
				t.Fatalf("shop 2 after release: %+v", l)
			}
			// A third shop that never used the id does not see it.
			if _, err := e.c.Hold(ctx, 3, id); !errors.Is(err, holdfast.ErrNotFound) {
				t.Fatalf("shop 3: %v", err)
			}

			// Expiry sweeps each shop's checkout on its own.
			id2 := uuid.New()
			for _, shop := range []int64{1, 2} {
				if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: id2, Lines: one(5, 1), TTL: holdfast.HoldTTLMin}); err != nil {
					t.Fatal(err)
				}
			}
			e.clock.Advance(2 * holdfast.HoldTTLMin)
			if n, err := e.c.SweepOnce(ctx); err != nil || n != 2 {
				t.Fatalf("sweep: %d %v", n, err)
			}
			for _, shop := range []int64{1, 2} {
				if h, err := e.c.Hold(ctx, shop, id2); err != nil || h.Status != holdfast.StatusExpired {
					t.Fatalf("shop %d after sweep: %+v %v", shop, h, err)
				}
			}
		})
	}
}

// TestCheckoutIDsPerShopConcurrent: many shops reserve under the same
// checkout ids at once (combined batches on batch keys mix shops): each
// shop gets its own hold for each id.
func TestCheckoutIDsPerShopConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyBatch}, 0)
	ctx := context.Background()
	const shops, ids = 8, 16
	for s := int64(1); s <= shops; s++ {
		e.stock(holdfast.Key{ShopID: s, ItemID: 1, LocationID: 1}, ids)
	}
	idList := make([]uuid.UUID, ids)
	for i := range idList {
		idList[i] = uuid.New()
	}
	var wg sync.WaitGroup
	errs := make(chan error, shops*ids)
	for s := int64(1); s <= shops; s++ {
		for _, id := range idList {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: s, CheckoutID: id, Lines: one(1, 1)})
				if err == nil && h.ShopID != s {
					err = errors.New("hold of another shop")
				}
				if err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for s := int64(1); s <= shops; s++ {
		if l := e.level(holdfast.Key{ShopID: s, ItemID: 1, LocationID: 1}); l.Held != ids {
			t.Errorf("shop %d: %+v", s, l)
		}
	}
}
