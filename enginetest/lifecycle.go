package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// testLifecycle walks a hold through reserve, claim and release, and asks
// each step again: a repeat of the outcome in place is Replayed success, a
// contradicting step is its typed error, and the stock follows.
func testLifecycle(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		ctx := ctxb()
		k := key(1, 42)
		e.stock(k, 10)

		id := uuid.New()
		held, err := e.reserve(1, id, one(42, 3))
		if err != nil {
			t.Fatal(err)
		}
		if held.Status != holdfast.StatusHeld || held.Replayed || held.CheckoutID != id || held.ShopID != 1 ||
			len(held.Lines) != 1 || held.Lines[0] != one(42, 3)[0] {
			t.Fatalf("first reserve: %+v", held)
		}
		if !held.ExpiresAt.Equal(e.Clock.Now().Add(holdfast.HoldTTLDefault)) {
			t.Fatalf("expires at %v, want now (%v) + the default TTL", held.ExpiresAt, e.Clock.Now())
		}
		if !held.Deadline.Equal(held.CreatedAt.Add(holdfast.HoldLifetimeMaxDefault)) {
			t.Fatalf("deadline %v, want created (%v) + the default lifetime", held.Deadline, held.CreatedAt)
		}
		if l := e.level(k); l.Held != 3 || l.Sellable != 7 || l.Available != 10 || l.OverCommitted {
			t.Fatalf("after reserve: %+v", l)
		}
		if got := e.hold(1, id); got.Status != holdfast.StatusHeld || !got.ExpiresAt.Equal(held.ExpiresAt) || got.EndedAt != nil {
			t.Fatalf("read back: %+v", got)
		}
		// Same checkout, same lines: the existing hold, nothing more held.
		again, err := e.reserve(1, id, one(42, 3))
		if err != nil || !again.Replayed || !again.ExpiresAt.Equal(held.ExpiresAt) {
			t.Fatalf("replayed reserve: %+v %v", again, err)
		}
		// Same checkout, other lines: conflict, nothing more held.
		if _, err := e.reserve(1, id, one(42, 4)); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("same checkout, other lines: %v, want ErrIdempotencyConflict", err)
		}
		// Another shop reusing the checkout id: a different checkout (that
		// shop has no stock of its own here), never a conflict.
		if _, err := e.reserve(2, id, one(42, 3)); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("the checkout id in a shop without stock: %v, want ErrInsufficientStock", err)
		}
		if l := e.level(k); l.Held != 3 {
			t.Fatalf("held after replay and conflict: %+v", l)
		}

		// Extend a held hold: a new expiry from now.
		e.Clock.Advance(time.Minute)
		ext, err := e.e.Extend(ctx, 1, id, 20*time.Minute)
		if err != nil || ext.Status != holdfast.StatusHeld || !ext.ExpiresAt.Equal(e.Clock.Now().Add(20*time.Minute)) {
			t.Fatalf("extend: %+v %v (now %v)", ext, err, e.Clock.Now())
		}

		claimed, err := e.e.Claim(ctx, 1, id)
		if err != nil || claimed.Status != holdfast.StatusClaimed || claimed.Replayed || claimed.EndedAt == nil {
			t.Fatalf("claim: %+v %v", claimed, err)
		}
		replay, err := e.e.Claim(ctx, 1, id)
		if err != nil || !replay.Replayed || replay.Status != holdfast.StatusClaimed || len(replay.Lines) != 1 || replay.Lines[0].Quantity != 3 {
			t.Fatalf("claim again: %+v %v", replay, err)
		}
		if _, err := e.e.Release(ctx, 1, id); !errors.Is(err, holdfast.ErrHoldClaimed) {
			t.Fatalf("release a claimed hold: %v, want ErrHoldClaimed", err)
		}
		if _, err := e.e.Extend(ctx, 1, id, time.Minute); !errors.Is(err, holdfast.ErrHoldClaimed) {
			t.Fatalf("extend a claimed hold: %v, want ErrHoldClaimed", err)
		}
		if _, err := e.reserve(1, id, one(42, 3)); !errors.Is(err, holdfast.ErrHoldClaimed) {
			t.Fatalf("reserve a claimed checkout: %v, want ErrHoldClaimed", err)
		}
		if l := e.level(k); l.Available != 7 || l.Held != 0 || l.Sellable != 7 {
			t.Fatalf("after claim: %+v", l)
		}

		// Release path.
		id2 := e.mustReserve(1, one(42, 7), 0)
		if _, err := e.reserve(1, uuid.New(), one(42, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("sold out: %v, want ErrInsufficientStock", err)
		}
		released, err := e.e.Release(ctx, 1, id2)
		if err != nil || released.Status != holdfast.StatusReleased || released.Replayed {
			t.Fatalf("release: %+v %v", released, err)
		}
		replay, err = e.e.Release(ctx, 1, id2)
		if err != nil || !replay.Replayed || replay.Status != holdfast.StatusReleased {
			t.Fatalf("release again: %+v %v", replay, err)
		}
		if _, err := e.e.Claim(ctx, 1, id2); !errors.Is(err, holdfast.ErrHoldReleased) {
			t.Fatalf("claim a released hold: %v, want ErrHoldReleased", err)
		}
		if _, err := e.e.Extend(ctx, 1, id2, time.Minute); !errors.Is(err, holdfast.ErrHoldReleased) {
			t.Fatalf("extend a released hold: %v, want ErrHoldReleased", err)
		}
		if _, err := e.reserve(1, id2, one(42, 7)); !errors.Is(err, holdfast.ErrHoldReleased) {
			t.Fatalf("reserve a released checkout: %v, want ErrHoldReleased", err)
		}
		unknown := uuid.New()
		if _, err := e.e.Claim(ctx, 1, unknown); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("claim unknown: %v, want ErrNotFound", err)
		}
		if _, err := e.e.Release(ctx, 1, unknown); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("release unknown: %v, want ErrNotFound", err)
		}
		if _, err := e.e.Extend(ctx, 1, unknown, time.Minute); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("extend unknown: %v, want ErrNotFound", err)
		}
		if _, err := e.e.Hold(ctx, 1, unknown); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("read unknown: %v, want ErrNotFound", err)
		}
		// Released units are sellable again, exactly.
		e.assertSellable(k, 7)
		e.mustReserve(1, one(42, 7), 0)
		if l := e.level(k); l.Held != 7 || l.Available != 7 || l.Sellable != 0 {
			t.Fatalf("end: %+v", l)
		}
	})
}

// testExpiryAndLateClaim: an expired hold keeps its units until the sweep;
// after it a claim takes the lines afresh when it can, else answers an
// *ExpiredError with the shortfall and changes nothing.
func testExpiryAndLateClaim(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		ctx := ctxb()
		k := key(1, 7)
		e.stock(k, 5)

		// Expired but not swept: reads expired, its units still owned, and
		// still claimable.
		id1 := e.mustReserve(1, one(7, 2), time.Minute)
		e.Clock.Advance(2 * time.Minute)
		if got := e.hold(1, id1); got.Status != holdfast.StatusExpired || !got.Claimable || got.EndedAt != nil || got.ExpiresAt.After(e.Clock.Now()) {
			t.Fatalf("unswept hold: %+v", got)
		}
		if l := e.level(k); l.Held != 2 || l.Sellable != 3 {
			t.Fatalf("an unswept expired hold gave its units back early: %+v", l)
		}
		if _, err := e.reserve(1, uuid.New(), one(7, 4)); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("reserve over an unswept hold's units: %v, want ErrInsufficientStock", err)
		}
		if got, err := e.e.Claim(ctx, 1, id1); err != nil || got.Status != holdfast.StatusClaimed {
			t.Fatalf("late claim before the sweep: %+v %v", got, err)
		}
		if l := e.level(k); l.Available != 3 || l.Held != 0 {
			t.Fatalf("after late claim: %+v", l)
		}

		// Swept: the units go back; the hold answers expired.
		id2 := e.mustReserve(1, one(7, 2), time.Minute)
		if n := e.sweep(30 * time.Second); n != 0 {
			t.Fatalf("swept %d holds before their expiry", n)
		}
		if n := e.sweep(90 * time.Second); n != 1 {
			t.Fatalf("sweep expired %d holds, want 1", n)
		}
		if n := e.sweep(0); n != 0 {
			t.Fatalf("second sweep expired %d holds, want 0", n)
		}
		if got := e.hold(1, id2); got.Status != holdfast.StatusExpired || got.EndedAt == nil {
			t.Fatalf("after the sweep: %+v", got)
		}
		if l := e.level(k); l.Held != 0 || l.Available != 3 || l.Sellable != 3 {
			t.Fatalf("after the sweep: %+v", l)
		}
		if _, err := e.e.Extend(ctx, 1, id2, time.Minute); !errors.Is(err, holdfast.ErrHoldExpired) {
			t.Fatalf("extend an expired hold: %v, want ErrHoldExpired", err)
		}
		if _, err := e.reserve(1, id2, one(7, 2)); !errors.Is(err, holdfast.ErrHoldExpired) {
			t.Fatalf("reserve an expired checkout: %v, want ErrHoldExpired", err)
		}
		// Stock still there: the claim takes it afresh.
		if got, err := e.e.Claim(ctx, 1, id2); err != nil || got.Status != holdfast.StatusClaimed {
			t.Fatalf("late claim after the sweep: %+v %v", got, err)
		}
		if got, err := e.e.Claim(ctx, 1, id2); err != nil || !got.Replayed {
			t.Fatalf("late claim again: %+v %v", got, err)
		}
		if l := e.level(k); l.Available != 1 || l.Held != 0 {
			t.Fatalf("after the late claim: %+v", l)
		}

		// Swept and the stock is gone: an *ExpiredError with the
		// shortfall, and the hold stays expired.
		id3 := e.mustReserve(1, one(7, 1), time.Minute)
		if n := e.sweep(2 * time.Minute); n != 1 {
			t.Fatalf("sweep expired %d holds, want 1", n)
		}
		e.mustReserve(1, one(7, 1), 0)
		_, err := e.e.Claim(ctx, 1, id3)
		var ee *holdfast.ExpiredError
		if !errors.As(err, &ee) || !errors.Is(err, holdfast.ErrHoldExpired) || len(ee.Lines) != 1 ||
			ee.Lines[0].ItemID != 7 || ee.Lines[0].Requested != 1 || ee.Lines[0].Sellable != 0 {
			t.Fatalf("late claim without stock: %v, want *ExpiredError with the shortfall", err)
		}
		if got := e.hold(1, id3); got.Status != holdfast.StatusExpired {
			t.Fatalf("a failed late claim changed the hold to %s", got.Status)
		}
		if l := e.level(k); l.Available != 1 || l.Held != 1 {
			t.Fatalf("a failed late claim changed the stock: %+v", l)
		}
		// Release of an expired hold answers truthfully: it is expired.
		if got, err := e.e.Release(ctx, 1, id3); err != nil || got.Status != holdfast.StatusExpired {
			t.Fatalf("release an expired hold: %+v %v", got, err)
		}
	})
}

// testExtendLifetimeCap: Extend moves the expiry from now, never past the
// hold's deadline; the sweep respects the extension.
func testExtendLifetimeCap(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, HoldLifetimeMax: 30 * time.Minute}, Options{})
		ctx := ctxb()
		e.stock(key(1, 1), 1)
		id := e.mustReserve(1, one(1, 1), 10*time.Minute)
		first := e.hold(1, id)
		if !first.Deadline.Equal(first.CreatedAt.Add(30 * time.Minute)) {
			t.Fatalf("deadline %v, want created %v + 30m", first.Deadline, first.CreatedAt)
		}
		e.Clock.Advance(5 * time.Minute)
		ext, err := e.e.Extend(ctx, 1, id, 20*time.Minute)
		if err != nil || !ext.ExpiresAt.Equal(e.Clock.Now().Add(20*time.Minute)) || ext.Replayed {
			t.Fatalf("extend: %+v %v", ext, err)
		}
		// 10 minutes later, 20 more would pass the deadline.
		e.Clock.Advance(10 * time.Minute)
		if _, err := e.e.Extend(ctx, 1, id, 20*time.Minute); !errors.Is(err, holdfast.ErrLifetimeExceeded) {
			t.Fatalf("extend past the deadline: %v, want ErrLifetimeExceeded", err)
		}
		if got := e.hold(1, id); !got.ExpiresAt.Equal(ext.ExpiresAt) {
			t.Fatalf("a refused extend moved the expiry: %+v", got)
		}
		if _, err := e.e.Extend(ctx, 1, id, 2*time.Hour); !errors.Is(err, holdfast.ErrInvalidArgument) {
			t.Fatalf("extend with a TTL above the lifetime: %v, want ErrInvalidArgument", err)
		}
		// Expired but unswept: still extendable.
		e.Clock.Advance(11 * time.Minute) // 26m after creation; expired 1m ago
		ext2, err := e.e.Extend(ctx, 1, id, 3*time.Minute)
		if err != nil || !ext2.ExpiresAt.Equal(e.Clock.Now().Add(3*time.Minute)) {
			t.Fatalf("extend an unswept expired hold: %+v %v", ext2, err)
		}
		// The sweep respects the extension.
		if n := e.sweep(2 * time.Minute); n != 0 {
			t.Fatalf("swept an extended hold")
		}
		if _, err := e.e.Claim(ctx, 1, id); err != nil {
			t.Fatal(err)
		}
	})
}

// testCarts: a cart is held whole or not at all; the shortfall names every
// short line and holds nothing; duplicate lines are rejected.
func testCarts(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		ctx := ctxb()
		for item, n := range map[int64]int{1: 5, 2: 3, 3: 8} {
			e.stock(key(1, item), n)
		}
		// Lines come back in (item, location) order whatever order they
		// were given in.
		cart := []holdfast.Line{{ItemID: 3, LocationID: 1, Quantity: 2}, {ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 2}}
		id := uuid.New()
		got, err := e.reserve(1, id, cart)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Lines) != 3 || got.Lines[0].ItemID != 1 || got.Lines[1].ItemID != 2 || got.Lines[2].ItemID != 3 ||
			got.Lines[2].Quantity != 2 {
			t.Fatalf("cart lines: %+v", got.Lines)
		}
		// A retry with the lines in another order is the same cart.
		again, err := e.reserve(1, id, []holdfast.Line{cart[1], cart[2], cart[0]})
		if err != nil || !again.Replayed {
			t.Fatalf("cart replay in another order: %+v %v", again, err)
		}
		// Two short lines out of three: nothing held, both named.
		_, err = e.reserve(1, uuid.New(), []holdfast.Line{
			{ItemID: 1, LocationID: 1, Quantity: 5}, {ItemID: 2, LocationID: 1, Quantity: 2}, {ItemID: 3, LocationID: 1, Quantity: 1},
		})
		var ise *holdfast.InsufficientStockError
		if !errors.As(err, &ise) || !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("short cart: %v, want *InsufficientStockError", err)
		}
		short := map[int64]holdfast.Shortfall{}
		for _, l := range ise.Lines {
			short[l.ItemID] = l
		}
		if len(short) != 2 || short[1].Requested != 5 || short[1].Sellable != 4 || short[2].Requested != 2 || short[2].Sellable != 1 {
			t.Fatalf("shortfall: %+v, want items 1 (5 of 4) and 2 (2 of 1)", ise.Lines)
		}
		for item, held := range map[int64]int{1: 1, 2: 2, 3: 2} {
			if l := e.level(key(1, item)); l.Held != held {
				t.Fatalf("item %d after a refused cart: %+v, want %d held", item, l, held)
			}
		}
		// A key the shop never stocked is short too, with nothing sellable.
		_, err = e.reserve(1, uuid.New(), []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 99, LocationID: 1, Quantity: 1}})
		if !errors.As(err, &ise) || len(ise.Lines) != 1 || ise.Lines[0].ItemID != 99 || ise.Lines[0].Sellable != 0 {
			t.Fatalf("cart with an unstocked key: %v", err)
		}
		// Duplicate lines: rejected, whatever else the cart says.
		_, err = e.reserve(1, uuid.New(), []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 1, LocationID: 1, Quantity: 1}})
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || !errors.Is(err, holdfast.ErrInvalidArgument) || ae.Field != "lines[1]" {
			t.Fatalf("duplicate lines: %v, want an *ArgumentError for lines[1]", err)
		}
		// The same item at two locations is two lines.
		e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 2}, 1)
		e.mustReserve(1, []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 1, LocationID: 2, Quantity: 1}}, 0)
		// Claiming the cart takes every line.
		if _, err := e.e.Claim(ctx, 1, id); err != nil {
			t.Fatal(err)
		}
		for item, avail := range map[int64]int{1: 4, 2: 1, 3: 6} {
			if l := e.level(key(1, item)); l.Available != avail {
				t.Fatalf("item %d after the cart's claim: %+v, want %d available", item, l, avail)
			}
		}
	})
}

// testCanceledContext: a call whose context is already canceled answers
// with an error that matches context.Canceled (or ErrUnavailable: nothing
// known to have changed), never success, and changes nothing.
func testCanceledContext(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		k := key(1, 6)
		e.stock(k, 5)
		held := e.mustReserve(1, one(6, 1), 0)
		ctx, cancel := context.WithCancel(ctxb())
		cancel()
		id := uuid.New()
		calls := map[string]func() error{
			"reserve": func() error {
				_, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(6, 2)})
				return err
			},
			"claim":   func() error { _, err := e.e.Claim(ctx, 1, held); return err },
			"release": func() error { _, err := e.e.Release(ctx, 1, held); return err },
			"extend":  func() error { _, err := e.e.Extend(ctx, 1, held, time.Hour); return err },
			"adjust": func() error {
				_, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 3, Reason: "restock"})
				return err
			},
		}
		for name, call := range calls {
			err := call()
			if !errors.Is(err, context.Canceled) && !errors.Is(err, holdfast.ErrUnavailable) {
				t.Errorf("%s with a canceled context: %v, want context.Canceled", name, err)
			}
		}
		if _, err := e.e.Hold(ctxb(), 1, id); !errors.Is(err, holdfast.ErrNotFound) {
			t.Errorf("a canceled reserve left its checkout: %v", err)
		}
		if got := e.hold(1, held); got.Status != holdfast.StatusHeld || got.ExpiresAt.After(e.Clock.Now().Add(holdfast.HoldTTLDefault)) {
			t.Errorf("canceled calls changed the hold: %+v", got)
		}
		if l := e.level(k); l.Available != 5 || l.Held != 1 {
			t.Errorf("canceled calls changed the stock: %+v", l)
		}
	})
}

// testMaintenance: Stop is safe before Start and twice; Start does not
// block; the started sweeper expires a hold past its TTL by itself.
func testMaintenance(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0], SweepInterval: 20 * time.Millisecond, ReplenishInterval: 20 * time.Millisecond}, Options{})
	ctx := ctxb()
	stop := func() {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, maintenanceWaitMax)
		defer cancel()
		if err := e.e.Stop(sctx); err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
	stop() // before Start
	k := key(1, 2)
	e.stock(k, 3)
	id := e.mustReserve(1, one(2, 2), time.Minute)
	e.Clock.Advance(2 * time.Minute)
	e.e.Start(ctx)
	// Wait for the sweeper, polling with a generous bound: how soon it
	// runs is the machine's business, that it runs is the engine's.
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	giveUp := time.After(maintenanceWaitMax)
	// Past its expiry the hold reads expired at once; it stays claimable
	// until the sweeper has taken it.
	for e.hold(1, id).Claimable {
		select {
		case <-poll.C:
		case <-giveUp:
			t.Fatalf("the started sweeper did not expire a hold past its TTL within %v", maintenanceWaitMax)
		}
	}
	if got := e.hold(1, id); got.Status != holdfast.StatusExpired || got.EndedAt == nil {
		t.Fatalf("after the sweeper: %+v", got)
	}
	if l := e.level(k); l.Held != 0 || l.Sellable != 3 {
		t.Fatalf("after the sweeper: %+v", l)
	}
	stop()
	stop() // twice
	// The engine still answers after its maintenance stopped.
	e.mustReserve(1, one(2, 3), 0)
}

// maintenanceWaitMax bounds how long the suite waits for background
// maintenance: generous, because CI machines are slow and busy.
const maintenanceWaitMax = time.Minute

// testLapsedHold: a hold past its expiry that no sweep has taken yet reads
// as expired and claimable (Hold and a Reserve retry), its units still its
// own: a claim succeeds as a plain claim, an Extend revives it, a Release
// ends it as expired without an error and gives its units back. A hold is
// valid up to and including its expiry instant.
func testLapsedHold(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		ctx := ctxb()
		k := key(1, 11)
		e.stock(k, 10)
		toClaim := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(11, 2), TTL: time.Minute}
		first, err := e.e.Reserve(ctx, toClaim)
		if err != nil || first.Status != holdfast.StatusHeld || !first.Claimable {
			t.Fatalf("reserve: %+v %v", first, err)
		}
		toRelease := e.mustReserve(1, one(11, 3), time.Minute)
		toExtend := e.mustReserve(1, one(11, 1), time.Minute)
		toSweep := e.mustReserve(1, one(11, 1), time.Minute)

		// At its expiry instant a hold is still held.
		e.Clock.Advance(time.Minute)
		if got := e.hold(1, toClaim.CheckoutID); got.Status != holdfast.StatusHeld || !got.Claimable || got.EndedAt != nil {
			t.Fatalf("at its expiry instant: %+v", got)
		}
		// Past it, not swept: expired and claimable, units still held.
		e.Clock.Advance(time.Second)
		for _, id := range []uuid.UUID{toClaim.CheckoutID, toRelease, toExtend, toSweep} {
			if got := e.hold(1, id); got.Status != holdfast.StatusExpired || !got.Claimable || got.EndedAt != nil {
				t.Fatalf("lapsed hold %s reads %+v, want expired and claimable", id, got)
			}
		}
		if l := e.level(k); l.Held != 7 || l.Available != 10 || l.Sellable != 3 {
			t.Fatalf("lapsed holds gave units back before a sweep or release: %+v", l)
		}
		// A Reserve retry answers the lapsed hold, not ErrHoldExpired; other
		// lines under its checkout are still a conflict.
		again, err := e.e.Reserve(ctx, toClaim)
		if err != nil || again.Status != holdfast.StatusExpired || !again.Claimable || !again.Replayed ||
			len(again.Lines) != 1 || again.Lines[0] != toClaim.Lines[0] {
			t.Fatalf("reserve retry of a lapsed hold: %+v %v", again, err)
		}
		if _, err := e.reserve(1, toClaim.CheckoutID, one(11, 1)); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("other lines under a lapsed checkout: %v, want ErrIdempotencyConflict", err)
		}
		if l := e.level(k); l.Held != 7 {
			t.Fatalf("retries of a lapsed hold changed the holds: %+v", l)
		}

		// Claim: a plain claim of the hold's own units.
		claimed, err := e.e.Claim(ctx, 1, toClaim.CheckoutID)
		if err != nil || claimed.Status != holdfast.StatusClaimed || claimed.Replayed || claimed.Claimable {
			t.Fatalf("claim of a lapsed hold: %+v %v", claimed, err)
		}
		// Release: ended as expired, no error, units back.
		rel, err := e.e.Release(ctx, 1, toRelease)
		if err != nil || rel.Status != holdfast.StatusExpired || rel.Claimable || rel.Replayed || rel.EndedAt == nil {
			t.Fatalf("release of a lapsed hold: %+v %v", rel, err)
		}
		if got := e.hold(1, toRelease); got.Status != holdfast.StatusExpired || got.Claimable {
			t.Fatalf("after its release: %+v", got)
		}
		if got, err := e.e.Release(ctx, 1, toRelease); err != nil || got.Status != holdfast.StatusExpired || !got.Replayed {
			t.Fatalf("release again: %+v %v", got, err)
		}
		if _, err := e.reserve(1, toRelease, one(11, 3)); !errors.Is(err, holdfast.ErrHoldExpired) {
			t.Fatalf("reserve retry after the release ended it: %v, want ErrHoldExpired", err)
		}
		// Extend: held again, from now.
		ext, err := e.e.Extend(ctx, 1, toExtend, 5*time.Minute)
		if err != nil || ext.Status != holdfast.StatusHeld || !ext.ExpiresAt.Equal(e.Clock.Now().Add(5*time.Minute)) {
			t.Fatalf("extend of a lapsed hold: %+v %v", ext, err)
		}
		if got := e.hold(1, toExtend); got.Status != holdfast.StatusHeld || !got.Claimable {
			t.Fatalf("after its extension: %+v", got)
		}
		// The sweep takes only the one left lapsed; after it the hold is
		// expired and no longer claimable.
		if n := e.sweep(0); n != 1 {
			t.Fatalf("sweep expired %d holds, want 1", n)
		}
		if got := e.hold(1, toSweep); got.Status != holdfast.StatusExpired || got.Claimable || got.EndedAt == nil {
			t.Fatalf("after the sweep: %+v", got)
		}
		if _, err := e.reserve(1, toSweep, one(11, 1)); !errors.Is(err, holdfast.ErrHoldExpired) {
			t.Fatalf("reserve retry of a swept hold: %v, want ErrHoldExpired", err)
		}
		// 10 - 2 claimed; the extended hold's 1 still held.
		if l := e.level(k); l.Available != 8 || l.Held != 1 {
			t.Fatalf("end: %+v", l)
		}
		e.assertSellable(k, 7)
	})
}
