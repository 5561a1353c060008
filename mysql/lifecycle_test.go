package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 5, holdfast.Config{})
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 10, LocationID: 1}
			e.stock(k, 10)
			e.strategy(k, s, 5)
			if l := e.level(k); l.Available != 10 || l.Held != 0 || l.Strategy != s {
				t.Fatalf("level after stock: %+v", l)
			}
			id := uuid.New()
			p := holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 10, LocationID: 1, Quantity: 3}}, TTL: time.Minute}
			h, err := e.c.Reserve(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != holdfast.StatusHeld || h.Replayed || !h.ExpiresAt.Equal(e.clock.Now().Add(time.Minute)) {
				t.Fatalf("hold: %+v (now %v)", h, e.clock.Now())
			}
			if l := e.level(k); l.Held != 3 || l.Sellable != 7 || l.Available != 10 {
				t.Fatalf("level after reserve: %+v", l)
			}
			// Idempotent retry.
			h2, err := e.c.Reserve(ctx, p)
			if err != nil || !h2.Replayed || !h2.CreatedAt.Equal(h.CreatedAt) {
				t.Fatalf("replay: %+v %v", h2, err)
			}
			// Same id, other lines.
			p2 := p
			p2.Lines = []holdfast.Line{{ItemID: 10, LocationID: 1, Quantity: 4}}
			if _, err := e.c.Reserve(ctx, p2); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
				t.Fatalf("conflict: %v", err)
			}
			// The same checkout id in another shop is another checkout.
			e.stock(holdfast.Key{ShopID: 2, ItemID: 10, LocationID: 1}, 1)
			if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 2, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 10, LocationID: 1, Quantity: 1}}}); err != nil {
				t.Fatalf("other shop: %v", err)
			}
			// Extend.
			e.clock.Advance(30 * time.Second)
			hx, err := e.c.Extend(ctx, 1, id, 2*time.Minute)
			if err != nil || !hx.ExpiresAt.Equal(e.clock.Now().Add(2*time.Minute)) {
				t.Fatalf("extend: %+v %v", hx, err)
			}
			if _, err := e.c.Extend(ctx, 1, id, 2*time.Minute); err != nil {
				t.Fatalf("extend to the same expiry: %v", err)
			}
			e.clock.Advance(59 * time.Minute)
			if _, err := e.c.Extend(ctx, 1, id, 10*time.Minute); !errors.Is(err, holdfast.ErrLifetimeExceeded) {
				t.Fatalf("extend past deadline: %v", err)
			}
			// Claim, twice.
			hc, err := e.c.Claim(ctx, 1, id)
			if err != nil || hc.Status != holdfast.StatusClaimed || hc.Replayed || hc.EndedAt == nil {
				t.Fatalf("claim: %+v %v", hc, err)
			}
			hc2, err := e.c.Claim(ctx, 1, id)
			if err != nil || !hc2.Replayed {
				t.Fatalf("claim again: %+v %v", hc2, err)
			}
			if _, err := e.c.Release(ctx, 1, id); !errors.Is(err, holdfast.ErrHoldClaimed) {
				t.Fatalf("release claimed: %v", err)
			}
			if _, err := e.c.Reserve(ctx, p); !errors.Is(err, holdfast.ErrHoldClaimed) {
				t.Fatalf("reserve claimed: %v", err)
			}
			if l := e.level(k); l.Available != 7 || l.Held != 0 || l.Sellable != 7 {
				t.Fatalf("level after claim: %+v", l)
			}
			// Release, twice; claim after release.
			h3, err := e.reserve(1, holdfast.Line{ItemID: 10, LocationID: 1, Quantity: 2})
			if err != nil {
				t.Fatal(err)
			}
			if hr, err := e.c.Release(ctx, 1, h3.CheckoutID); err != nil || hr.Status != holdfast.StatusReleased {
				t.Fatalf("release: %+v %v", hr, err)
			}
			if hr, err := e.c.Release(ctx, 1, h3.CheckoutID); err != nil || !hr.Replayed {
				t.Fatalf("release again: %+v %v", hr, err)
			}
			if _, err := e.c.Claim(ctx, 1, h3.CheckoutID); !errors.Is(err, holdfast.ErrHoldReleased) {
				t.Fatalf("claim released: %v", err)
			}
			if got, err := e.c.Hold(ctx, 1, h3.CheckoutID); err != nil || got.Status != holdfast.StatusReleased {
				t.Fatalf("hold: %+v %v", got, err)
			}
			if _, err := e.c.Hold(ctx, 1, uuid.New()); !errors.Is(err, holdfast.ErrNotFound) {
				t.Fatalf("unknown hold: %v", err)
			}
			// Sold out names the line and writes nothing.
			_, err = e.reserve(1, holdfast.Line{ItemID: 10, LocationID: 1, Quantity: 8})
			var ise *holdfast.InsufficientStockError
			if !errors.As(err, &ise) || len(ise.Lines) != 1 || ise.Lines[0].Sellable != 7 {
				t.Fatalf("sold out: %v", err)
			}
			// All of it, through the slow path for the pool (cap 5).
			if _, err := e.reserve(1, holdfast.Line{ItemID: 10, LocationID: 1, Quantity: 7}); err != nil {
				t.Fatalf("reserve the rest: %v", err)
			}
			if l := e.level(k); l.Sellable != 0 || l.Held != 7 || l.Pooled != 0 {
				t.Fatalf("level sold out: %+v", l)
			}
			e.checkInvariant()
		})
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, holdfast.Config{})
	ctx := context.Background()
	cases := []struct {
		p     holdfast.ReserveParams
		field string
	}{
		{holdfast.ReserveParams{ShopID: 0, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}, "shop_id"},
		{holdfast.ReserveParams{ShopID: 1, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}, "checkout_id"},
		{holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New()}, "lines"},
		{holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 0}}}, "lines[0].quantity"},
		{holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 1, LocationID: 1, Quantity: 2}}}, "lines[1]"},
		{holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}, TTL: time.Millisecond}, "ttl"},
	}
	for _, tc := range cases {
		_, err := e.c.Reserve(ctx, tc.p)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != tc.field || !errors.Is(err, holdfast.ErrInvalidArgument) {
			t.Errorf("%+v: got %v, want field %s", tc.p, err, tc.field)
		}
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := e.c.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 5}); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Errorf("no reason: %v", err)
	}
	if _, err := e.c.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: -1, Reason: "x"}); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Errorf("below zero: %v", err)
	}
	if _, err := e.c.SetStrategy(ctx, k, holdfast.StrategySlots, 0); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Errorf("slots: %v", err)
	}
	e.checkInvariant()
	if rep, _ := e.c.CheckInvariant(ctx); rep.Keys != 0 {
		t.Errorf("bad input created keys: %s", rep)
	}
}

// TestMaintenanceWorkers: Stop before Start is fine; started, the sweeper
// expires a hold past its TTL (the clock is injected, the wait is a bounded
// poll), the replenisher refills a pool, and the events past their
// retention are sequenced and purged; Stop twice is fine.
func TestMaintenanceWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, holdfast.Config{SweepInterval: 20 * time.Millisecond, ReplenishInterval: 20 * time.Millisecond, EventRetention: time.Minute})
	ctx := context.Background()
	if err := e.c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	e.strategy(k, holdfast.StrategyPool, 4)
	h, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 3}}, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	before := e.clock.Now().UTC() // the stock changes' and the reservation's events
	e.clock.Advance(2 * time.Minute)
	e.c.Start(ctx)
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := e.c.Hold(ctx, 1, h.CheckoutID)
		if err != nil {
			t.Fatal(err)
		}
		var events int
		if err := e.db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM holdfast_events WHERE created_at <= ?", before).Scan(&events); err != nil {
			t.Fatal(err)
		}
		if got.Status == holdfast.StatusExpired && e.level(k).Pooled == 4 && events == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers did not sweep, refill and purge the events within 60s: %+v %+v, %d old events left", got, e.level(k), events)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	if err := e.c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	e.checkInvariant()
}
