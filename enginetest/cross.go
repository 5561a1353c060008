package enginetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// testCross: the features built side by side (edit and partial claim,
// allocation, buyer limits and safety stock, events, the waitlist) meet
// correctly: every path that takes units respects the buyer's limits, the
// safety stock and the queue of a key with waiters; combinations not
// offered are refused with an *ArgumentError naming the field, and nothing
// is written.
func testCross(t *testing.T, h *Harness) {
	t.Parallel()
	t.Run("AllocationBuyerLimit", func(t *testing.T) { testCrossAllocationBuyer(t, h) })
	t.Run("EditBuyerLimit", func(t *testing.T) { testCrossEditBuyer(t, h) })
	t.Run("PartialClaimBuyerLimit", func(t *testing.T) { testCrossPartialClaimBuyer(t, h) })
	t.Run("SafetyStock", func(t *testing.T) { testCrossSafety(t, h) })
	t.Run("WaitlistNoJump", func(t *testing.T) { testCrossWaitlistNoJump(t, h) })
	t.Run("Refused", func(t *testing.T) { testCrossRefused(t, h) })
	t.Run("Events", func(t *testing.T) { testCrossEvents(t, h) })
	t.Run("LateClaim", func(t *testing.T) { testCrossLateClaim(t, h) })
	t.Run("BuyerRaces", func(t *testing.T) { testCrossBuyerRaces(t, h) })
}

// asBuyer reserves lines for a named buyer under a new checkout id.
func (e *env) asBuyer(shop int64, lines []holdfast.Line, buyer string) (*holdfast.Hold, error) {
	_, h, err := e.buyerReserve(shop, buyer, lines, 0)
	return h, err
}

func (e *env) limit(shop, item int64, n int) { e.setBuyerLimit(shop, item, n, 0) }

// testCrossAllocationBuyer: a reservation with allocated lines is held to
// the buyer's limits, and its hold counts against them.
func testCrossAllocationBuyer(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{})
		e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 10)
		e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 2}, 10)
		e.limit(1, 1, 3)
		got, err := e.asBuyer(1, []holdfast.Line{alloc(1, 2, false, 2, 1)}, "ann")
		if err != nil {
			t.Fatalf("allocated reserve within the limit: %v", err)
		}
		if len(got.Lines) != 1 || got.Lines[0].LocationID != 2 {
			t.Fatalf("allocated to %+v, want location 2", got.Lines)
		}
		if _, err := e.asBuyer(1, []holdfast.Line{alloc(1, 2, false, 2, 1)}, "ann"); !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
			t.Fatalf("allocated reserve past the limit: %v, want ErrBuyerLimitExceeded", err)
		}
		// The allocated hold counts against a fixed-location reservation.
		if _, err := e.asBuyer(1, []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}, "ann"); !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
			t.Fatalf("fixed reserve past the limit after an allocated hold: %v, want ErrBuyerLimitExceeded", err)
		}
		if _, err := e.asBuyer(1, []holdfast.Line{alloc(1, 1, false, 1, 2)}, "ann"); err != nil {
			t.Fatalf("allocated reserve up to the limit: %v", err)
		}
		if _, err := e.asBuyer(1, []holdfast.Line{alloc(1, 3, false, 1)}, "bob"); err != nil {
			t.Fatalf("another buyer: %v", err)
		}
		if l := e.level(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}); l.Held != 4 {
			t.Fatalf("location 1: %+v, want 4 held", l)
		}
	})
}

// testCrossEditBuyer: an edit that grows a buyer's hold is held to the
// buyer's limit; one that stays within it, or shrinks, is not refused.
func testCrossEditBuyer(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{})
		k := key(1, 2)
		e.stock(k, 10)
		e.limit(1, 2, 3)
		held, err := e.asBuyer(1, one(2, 2), "ann")
		if err != nil {
			t.Fatal(err)
		}
		edit := func(rev int64, q int) (*holdfast.Hold, error) {
			return e.e.Edit(ctxb(), holdfast.EditParams{ShopID: 1, CheckoutID: held.CheckoutID, Revision: rev, Lines: one(2, q)})
		}
		if _, err := edit(2, 4); !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
			t.Fatalf("edit to 4 of a limit of 3: %v, want ErrBuyerLimitExceeded", err)
		}
		if got := e.hold(1, held.CheckoutID); got.Revision != 1 || !slices.Equal(got.Lines, one(2, 2)) {
			t.Fatalf("refused edit changed the hold: %+v", got)
		}
		if _, err := edit(2, 3); err != nil {
			t.Fatalf("edit to the limit: %v", err)
		}
		if _, err := e.asBuyer(1, one(2, 1), "ann"); !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
			t.Fatalf("reserve past the limit after an edit: %v, want ErrBuyerLimitExceeded", err)
		}
		// A lower limit does not stop the buyer shrinking the hold.
		e.limit(1, 2, 1)
		if _, err := edit(3, 2); err != nil {
			t.Fatalf("shrinking edit under a lowered limit: %v", err)
		}
		if l := e.level(k); l.Held != 2 {
			t.Fatalf("level %+v, want 2 held", l)
		}
	})
}

// testCrossPartialClaimBuyer: what a partial claim gives back returns to
// the buyer's allowance; what it claims stays counted.
func testCrossPartialClaimBuyer(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	e.stock(key(1, 3), 10)
	e.limit(1, 3, 3)
	held, err := e.asBuyer(1, one(3, 3), "ann")
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.e.ClaimLines(ctxb(), 1, held.CheckoutID, one(3, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Released, one(3, 2)) {
		t.Fatalf("partial claim released %+v, want %+v", got.Released, one(3, 2))
	}
	if _, err := e.asBuyer(1, one(3, 3), "ann"); !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
		t.Fatalf("claimed unit not counted: %v, want ErrBuyerLimitExceeded", err)
	}
	if _, err := e.asBuyer(1, one(3, 2), "ann"); err != nil {
		t.Fatalf("released units not back in the allowance: %v", err)
	}
}

// testCrossSafety: an edit's extra units, an allocation's choice and a
// waitlist grant never hand out units of the safety stock.
func testCrossSafety(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})

		// Edit: 10 available, 4 safety: 6 sellable.
		k := key(1, 1)
		e.stock(k, 10)
		if _, err := e.e.SetSafetyStock(ctxb(), k, 4); err != nil {
			t.Fatal(err)
		}
		id := e.mustReserve(1, one(1, 2), 0)
		if _, err := e.e.Edit(ctxb(), holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: one(1, 7)}); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("edit into the safety stock: %v, want ErrInsufficientStock", err)
		}
		if _, err := e.e.Edit(ctxb(), holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: one(1, 6)}); err != nil {
			t.Fatalf("edit up to the safety stock: %v", err)
		}
		if l := e.level(k); l.Held != 6 || l.Sellable != 0 {
			t.Fatalf("after the edit: %+v", l)
		}

		// Allocation: location 1's stock is all safety stock.
		k1, k2 := holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}, holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 2}
		e.stock(k1, 5)
		e.stock(k2, 5)
		if _, err := e.e.SetSafetyStock(ctxb(), k1, 5); err != nil {
			t.Fatal(err)
		}
		got, err := e.reserve(1, uuid.New(), []holdfast.Line{alloc(2, 3, false, 1, 2)})
		if err != nil {
			t.Fatalf("allocation past a location of safety stock: %v", err)
		}
		if got.Lines[0].LocationID != 2 {
			t.Fatalf("allocated %+v, want location 2 (location 1 is safety stock)", got.Lines)
		}
		if _, err := e.reserve(1, uuid.New(), []holdfast.Line{alloc(2, 3, true, 1, 2)}); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("split allocation into the safety stock: %v, want ErrInsufficientStock", err)
		}
		if l := e.level(k1); l.Held != 0 {
			t.Fatalf("safety stock allocated: %+v", l)
		}

		// Waitlist: the safety stock rises while a cart waits, as far as
		// the cart can still be served (3 ≤ 5 − 2; a raise beyond ends the
		// wait as unservable: Waitlist/SafetyRaiseEnds); the grant waits
		// for sellable units.
		kw := key(1, 3)
		e.stock(kw, 5)
		a := e.mustReserve(1, one(3, 4), 0)
		b := e.mustReserve(1, one(3, 1), 0)
		w := uuid.New()
		e.mustWait(1, w, one(3, 3), 10*time.Minute)
		if _, err := e.e.SetSafetyStock(ctxb(), kw, 2); err != nil {
			t.Fatal(err)
		}
		if _, err := e.e.Release(ctxb(), 1, a); err != nil {
			t.Fatal(err)
		}
		e.serve()
		if st := e.waitState(1, w); st != "waiting:1" {
			t.Fatalf("waiter with 2 sellable units for 3: %s, want waiting:1 (level %+v)", st, e.level(kw))
		}
		if _, err := e.e.Release(ctxb(), 1, b); err != nil {
			t.Fatal(err)
		}
		e.serve()
		if st := e.waitState(1, w); st != "held" {
			t.Fatalf("waiter with 3 sellable units for 3: %s, want held", st)
		}
		if l := e.level(kw); l.Held != 3 || l.Sellable != 0 {
			t.Fatalf("after the grant: %+v", l)
		}

		// A cart asking more than could ever be sold (available less the
		// safety stock) is short, not queued behind the holds.
		kq := key(1, 4)
		e.stock(kq, 5)
		if _, err := e.e.SetSafetyStock(ctxb(), kq, 3); err != nil {
			t.Fatal(err)
		}
		e.mustReserve(1, one(4, 2), 0)
		if _, err := e.waitFor(1, uuid.New(), one(4, 3), 10*time.Minute); !isShortNotWaiting(err) {
			t.Fatalf("wait for 3 of 2 sellable ever: %v, want ErrInsufficientStock (not waitlisted)", err)
		}
		e.mustWait(1, uuid.New(), one(4, 2), 10*time.Minute)
	})
}

// testCrossWaitlistNoJump: units returning to a key with waiters go to the
// waiters, not to an edit that grows a line or to an allocation.
func testCrossWaitlistNoJump(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		k := key(1, 6)
		e.stock(k, 3)
		a := e.mustReserve(1, one(6, 2), 0)
		c := e.mustReserve(1, one(6, 1), 0)
		w := uuid.New()
		e.mustWait(1, w, one(6, 2), 10*time.Minute)
		if _, err := e.e.Release(ctxb(), 1, a); err != nil {
			t.Fatal(err)
		}
		if _, err := e.e.Edit(ctxb(), holdfast.EditParams{ShopID: 1, CheckoutID: c, Revision: 2, Lines: one(6, 2)}); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("edit growing into a waiter's units: %v, want ErrInsufficientStock", err)
		}
		if _, err := e.reserve(1, uuid.New(), []holdfast.Line{alloc(6, 1, false, 1)}); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("allocation of a waiter's units: %v, want ErrInsufficientStock", err)
		}
		e.serve()
		if st := e.waitState(1, w); st != "held" {
			t.Fatalf("waiter: %s, want held (level %+v)", st, e.level(k))
		}
		if l := e.level(k); l.Held != 3 {
			t.Fatalf("level %+v, want 3 held", l)
		}
	})
}

// testCrossRefused: combinations not offered are *ArgumentErrors naming the
// field, and write nothing.
func testCrossRefused(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	e.stock(key(1, 1), 5)
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 2}, 5)
	held := e.mustReserve(1, one(1, 5), 0)
	var before map[string]int
	if e.Rows != nil {
		var err error
		if before, err = e.Rows(ctxb()); err != nil {
			t.Fatal(err)
		}
	}
	field := func(err error) string {
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) {
			return fmt.Sprintf("not an *ArgumentError: %v", err)
		}
		return ae.Field
	}
	// (Waiting with a buyer id is served since the grant keeps the buyer:
	// waitbuyer.go.) Waiting with allocated lines: the queue is per key.
	_, err := e.e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{alloc(1, 1, false, 1, 2)}, Wait: time.Minute})
	if f := field(err); f != "wait" {
		t.Errorf("wait with allocated lines: %v (field %s), want an *ArgumentError on wait", err, f)
	}
	// An edit names each line's location.
	_, err = e.e.Edit(ctxb(), holdfast.EditParams{ShopID: 1, CheckoutID: held, Revision: 2, Lines: []holdfast.Line{alloc(1, 1, false, 2)}})
	if f := field(err); f != "lines[0].location_id" {
		t.Errorf("edit with an allocated line: %v (field %s), want an *ArgumentError on lines[0].location_id", err, f)
	}
	if got := e.hold(1, held); got.Revision != 1 || !slices.Equal(got.Lines, one(1, 5)) {
		t.Errorf("refused edit changed the hold: %+v", got)
	}
	if e.Rows != nil {
		after, err := e.Rows(ctxb())
		if err != nil {
			t.Fatal(err)
		}
		for table, n := range after {
			if before[table] != n {
				t.Errorf("refused calls wrote to %s: %d rows, were %d", table, n, before[table])
			}
		}
	}
}

// testCrossEvents: an allocated hold's events name the locations chosen; an
// edit is hold.edited with the new lines; a partial claim is hold.claimed
// with the claimed lines; a waitlist grant comes after the release that
// freed its units.
func testCrossEvents(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 10)
	e.stock(holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 2}, 10)
	e.stock(key(1, 2), 1)
	start := e.events(1, 0)
	after := int64(0)
	if n := len(start); n > 0 {
		after = start[n-1].Cursor
	}
	x := uuid.New()
	if _, err := e.reserve(1, x, []holdfast.Line{alloc(1, 3, false, 2, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.e.Edit(ctxb(), holdfast.EditParams{ShopID: 1, CheckoutID: x, Revision: 2, Lines: []holdfast.Line{{ItemID: 1, LocationID: 2, Quantity: 4}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.e.ClaimLines(ctxb(), 1, x, []holdfast.Line{{ItemID: 1, LocationID: 2, Quantity: 1}}); err != nil {
		t.Fatal(err)
	}
	a := e.mustReserve(1, one(2, 1), 0)
	w := uuid.New()
	e.mustWait(1, w, one(2, 1), 10*time.Minute)
	if _, err := e.e.Release(ctxb(), 1, a); err != nil {
		t.Fatal(err)
	}
	e.serve()
	names := map[uuid.UUID]string{x: "x", a: "a", w: "w"}
	var got []string
	for _, ev := range e.events(1, after) {
		if ev.CheckoutID != nil {
			got = append(got, describe(ev, names))
		}
	}
	want := []string{
		"hold.created x 1@2×3",
		"hold.edited x 1@2×4",
		"hold.claimed x 1@2×1",
		"hold.created a 2@1×1",
	}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("events:\n%v\nwant first:\n%v", got, want)
	}
	// The waitlist's own events may name the wait; the release must come
	// before the grant.
	rel := slices.Index(got, "hold.released a 2@1×1")
	grant := slices.IndexFunc(got, func(s string) bool { return s == "waitlist.held w 2@1×1" })
	if rel < 0 || grant < 0 || rel > grant {
		t.Fatalf("events: %v: want hold.released a before waitlist.held w", got)
	}
}

// testCrossLateClaim: a late claim takes its units afresh, so it never
// takes units of the safety stock, nor units a waiter is queued for.
func testCrossLateClaim(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		k := key(1, 1)
		e.stock(k, 5)
		if _, err := e.e.SetSafetyStock(ctxb(), k, 2); err != nil {
			t.Fatal(err)
		}
		a := e.mustReserve(1, one(1, 3), time.Minute)
		kw := key(1, 2)
		e.stock(kw, 2)
		b := e.mustReserve(1, one(2, 2), time.Minute)
		w := uuid.New()
		e.mustWait(1, w, one(2, 2), 10*time.Minute)
		if n := e.sweep(2 * time.Minute); n != 2 {
			t.Fatalf("swept %d holds, want 2", n)
		}
		e.mustReserve(1, one(1, 2), 0)
		if _, err := e.e.Claim(ctxb(), 1, a); !errors.Is(err, holdfast.ErrHoldExpired) {
			t.Fatalf("late claim of 3 with 1 sellable (2 safety): %v, want ErrHoldExpired", err)
		}
		if _, err := e.e.Claim(ctxb(), 1, b); !errors.Is(err, holdfast.ErrHoldExpired) {
			t.Fatalf("late claim of a waiter's units: %v, want ErrHoldExpired", err)
		}
		e.serve()
		if st := e.waitState(1, w); st != "held" {
			t.Fatalf("waiter: %s, want held", st)
		}
		if l := e.level(k); l.Available != 5 || l.Held != 2 {
			t.Fatalf("level %+v, want 5 available, 2 held", l)
		}
	})
}

// testCrossBuyerRaces: one buyer's edits that grow holds, allocated
// reservations and fixed ones, all at once, never take the buyer past the
// limit: each is checked under the buyer's lock of the item.
func testCrossBuyerRaces(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{Conns: 24})
		e.stock(holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}, 500)
		e.stock(holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 2}, 500)
		const limit = 6
		e.limit(1, 7, limit)
		rounds := 3
		if long() {
			rounds = 20
		}
		for r := range rounds {
			buyer := fmt.Sprintf("b%d", r)
			var ids []uuid.UUID
			for range 3 {
				got, err := e.asBuyer(1, one(7, 1), buyer)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, got.CheckoutID)
			}
			var bad errorSink
			var wg sync.WaitGroup
			var mu sync.Mutex
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := e.e.Edit(ctxb(), holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: one(7, 3)})
					if err != nil && !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
						bad.add("edit: %v", err)
					}
				}()
			}
			for i := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					lines := one(7, 2)
					if i%2 == 0 {
						lines = []holdfast.Line{alloc(7, 2, false, 2, 1)}
					}
					got, err := e.asBuyer(1, lines, buyer)
					switch {
					case err == nil:
						mu.Lock()
						ids = append(ids, got.CheckoutID)
						mu.Unlock()
					case !errors.Is(err, holdfast.ErrBuyerLimitExceeded):
						bad.add("reserve: %v", err)
					}
				}()
			}
			wg.Wait()
			bad.check(t)
			total := 0
			for _, id := range ids {
				for _, l := range e.hold(1, id).Lines {
					total += l.Quantity
				}
			}
			if total > limit {
				t.Fatalf("round %d: the buyer holds %d units, limit %d", r, total, limit)
			}
			// The buyer's count agrees with the holds read back.
			if total < limit {
				if _, err := e.asBuyer(1, one(7, limit-total), buyer); err != nil {
					t.Fatalf("round %d: the rest of the limit (%d of %d): %v", r, limit-total, limit, err)
				}
			}
			if _, err := e.asBuyer(1, one(7, 1), buyer); !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
				t.Fatalf("round %d: one past the limit: %v, want ErrBuyerLimitExceeded", r, err)
			}
		}
	})
}
