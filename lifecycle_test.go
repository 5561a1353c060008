package holdfast_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

var strategies = []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyBatch, holdfast.StrategyPool, holdfast.StrategySlots}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, 0)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 1}
			e.stock(k, 10)

			id := uuid.New()
			h, err := reserve(t, e.c, 1, id, one(42, 3))
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != holdfast.StatusHeld || h.Replayed {
				t.Fatalf("first reserve: %+v", h)
			}
			if l := e.level(k); l.Held != 3 || l.Sellable != 7 || l.Available != 10 {
				t.Fatalf("after reserve: %+v", l)
			}
			// Same checkout, same lines: the existing hold.
			h2, err := reserve(t, e.c, 1, id, one(42, 3))
			if err != nil || !h2.Replayed || !h2.ExpiresAt.Equal(h.ExpiresAt) {
				t.Fatalf("replay: %+v %v", h2, err)
			}
			// Same checkout, other lines: conflict, nothing more held.
			if _, err := reserve(t, e.c, 1, id, one(42, 4)); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
				t.Fatalf("conflict: %v", err)
			}
			// Another shop reusing the checkout id: a different checkout
			// (that shop has no stock of its own here), never a conflict.
			if _, err := reserve(t, e.c, 2, id, one(42, 3)); !errors.Is(err, holdfast.ErrInsufficientStock) {
				t.Fatalf("other shop: %v", err)
			}
			if l := e.level(k); l.Held != 3 {
				t.Fatalf("held after conflicts: %+v", l)
			}

			c1, err := e.c.Claim(ctx, 1, id)
			if err != nil || c1.Status != holdfast.StatusClaimed || c1.Replayed {
				t.Fatalf("claim: %+v %v", c1, err)
			}
			c2, err := e.c.Claim(ctx, 1, id)
			if err != nil || !c2.Replayed || len(c2.Lines) != 1 || c2.Lines[0].Quantity != 3 {
				t.Fatalf("claim replay: %+v %v", c2, err)
			}
			if _, err := e.c.Release(ctx, 1, id); !errors.Is(err, holdfast.ErrHoldClaimed) {
				t.Fatalf("release claimed: %v", err)
			}
			if _, err := reserve(t, e.c, 1, id, one(42, 3)); !errors.Is(err, holdfast.ErrHoldClaimed) {
				t.Fatalf("reserve claimed: %v", err)
			}
			if l := e.level(k); l.Available != 7 || l.Held != 0 {
				t.Fatalf("after claim: %+v", l)
			}

			// Release path.
			id2 := uuid.New()
			if _, err := reserve(t, e.c, 1, id2, one(42, 7)); err != nil {
				t.Fatal(err)
			}
			if _, err := reserve(t, e.c, 1, uuid.New(), one(42, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
				t.Fatalf("sold out: %v", err)
			}
			r1, err := e.c.Release(ctx, 1, id2)
			if err != nil || r1.Status != holdfast.StatusReleased {
				t.Fatalf("release: %+v %v", r1, err)
			}
			r2, err := e.c.Release(ctx, 1, id2)
			if err != nil || !r2.Replayed {
				t.Fatalf("release replay: %+v %v", r2, err)
			}
			if _, err := e.c.Claim(ctx, 1, id2); !errors.Is(err, holdfast.ErrHoldReleased) {
				t.Fatalf("claim released: %v", err)
			}
			if _, err := e.c.Claim(ctx, 1, uuid.New()); !errors.Is(err, holdfast.ErrNotFound) {
				t.Fatalf("claim unknown: %v", err)
			}
			// Released units are sellable again.
			if _, err := reserve(t, e.c, 1, uuid.New(), one(42, 7)); err != nil {
				t.Fatalf("reserve after release: %v", err)
			}
			if l := e.level(k); l.Held != 7 || l.Available != 7 || l.Sellable != 0 {
				t.Fatalf("end: %+v", l)
			}
		})
	}
}

func TestExpiryAndLateClaim(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, holdfast.Config{Strategy: s, Slots: 4}, 0)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
			e.stock(k, 5)
			p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(7, 2), TTL: time.Minute}
			if _, err := e.c.Reserve(ctx, p); err != nil {
				t.Fatal(err)
			}
			// Expired but not swept: reads expired, still claimable.
			e.clock.Advance(2 * time.Minute)
			if h, err := e.c.Hold(ctx, 1, p.CheckoutID); err != nil || h.Status != holdfast.StatusExpired || !h.Claimable || h.ExpiresAt.After(e.clock.Now()) {
				t.Fatalf("unswept hold: %+v %v", h, err)
			}
			if _, err := e.c.Claim(ctx, 1, p.CheckoutID); err != nil {
				t.Fatalf("late claim before sweep: %v", err)
			}

			// Swept, stock still there: the claim takes it afresh.
			p2 := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(7, 2), TTL: time.Minute}
			if _, err := e.c.Reserve(ctx, p2); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Minute)
			if n, err := e.c.SweepOnce(ctx); err != nil || n != 1 {
				t.Fatalf("sweep: %d %v", n, err)
			}
			if h, _ := e.c.Hold(ctx, 1, p2.CheckoutID); h.Status != holdfast.StatusExpired {
				t.Fatalf("status after sweep: %s", h.Status)
			}
			if l := e.level(k); l.Held != 0 || l.Available != 3 {
				t.Fatalf("after sweep: %+v", l)
			}
			if _, err := e.c.Extend(ctx, 1, p2.CheckoutID, time.Minute); !errors.Is(err, holdfast.ErrHoldExpired) {
				t.Fatalf("extend expired: %v", err)
			}
			if h, err := e.c.Claim(ctx, 1, p2.CheckoutID); err != nil || h.Status != holdfast.StatusClaimed {
				t.Fatalf("late claim after sweep: %+v %v", h, err)
			}

			// Swept and the stock is gone: ExpiredError with the shortfall.
			p3 := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(7, 1), TTL: time.Minute}
			if _, err := e.c.Reserve(ctx, p3); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Minute)
			if _, err := e.c.SweepOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := reserve(t, e.c, 1, uuid.New(), one(7, 1)); err != nil {
				t.Fatal(err)
			}
			_, err := e.c.Claim(ctx, 1, p3.CheckoutID)
			var ee *holdfast.ExpiredError
			if !errors.As(err, &ee) || len(ee.Lines) != 1 || ee.Lines[0].Requested != 1 || ee.Lines[0].Sellable != 0 {
				t.Fatalf("late claim without stock: %v", err)
			}
			if h, _ := e.c.Hold(ctx, 1, p3.CheckoutID); h.Status != holdfast.StatusExpired {
				t.Fatalf("failed late claim changed status to %s", h.Status)
			}
			// Release of an expired hold answers truthfully.
			if h, err := e.c.Release(ctx, 1, p3.CheckoutID); err != nil || h.Status != holdfast.StatusExpired {
				t.Fatalf("release expired: %+v %v", h, err)
			}
		})
	}
}

func TestExtendLifetimeCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{HoldLifetimeMax: 30 * time.Minute}, 0)
	ctx := context.Background()
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 1)
	p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1), TTL: 10 * time.Minute}
	h, err := e.c.Reserve(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(5 * time.Minute)
	h2, err := e.c.Extend(ctx, 1, p.CheckoutID, 20*time.Minute)
	if err != nil || !h2.ExpiresAt.After(h.ExpiresAt) {
		t.Fatalf("extend: %+v %v", h2, err)
	}
	e.clock.Advance(10 * time.Minute)
	if _, err := e.c.Extend(ctx, 1, p.CheckoutID, 20*time.Minute); !errors.Is(err, holdfast.ErrLifetimeExceeded) {
		t.Fatalf("extend past cap: %v", err)
	}
	if _, err := e.c.Extend(ctx, 1, p.CheckoutID, 2*time.Hour); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Fatalf("extend ttl out of bounds: %v", err)
	}
	// The sweeper respects the extension.
	e.clock.Advance(4 * time.Minute)
	if n, _ := e.c.SweepOnce(ctx); n != 0 {
		t.Fatalf("swept an extended hold")
	}
	if _, err := e.c.Claim(ctx, 1, p.CheckoutID); err != nil {
		t.Fatal(err)
	}
}
