package enginetest

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// The waitlist (issue #17 item 2): a short reservation that asks to wait
// while holds are outstanding is queued; units that come back (release,
// expiry, restock) go to the waiting carts first-come-first-served, whole,
// as ordinary holds; a wait that runs out ends; new buyers never get units
// returning to a key with waiters.

// waitFor reserves lines for id asking to wait up to d.
func (e *env) waitFor(shop int64, id uuid.UUID, lines []holdfast.Line, d time.Duration) (*holdfast.Hold, error) {
	return e.e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: lines, Wait: d})
}

// mustWait enqueues id and returns its position.
func (e *env) mustWait(shop int64, id uuid.UUID, lines []holdfast.Line, d time.Duration) int {
	e.t.Helper()
	h, err := e.waitFor(shop, id, lines, d)
	var we *holdfast.WaitlistedError
	if !errors.As(err, &we) || h != nil {
		e.t.Fatalf("reserve %+v with wait: %+v %v, want *WaitlistedError", lines, h, err)
	}
	return we.Position
}

// serve runs one pass of the waitlist server.
func (e *env) serve() int {
	e.t.Helper()
	n, err := e.e.ServeWaitlist(ctxb())
	if err != nil {
		e.t.Fatalf("serve waitlist: %v", err)
	}
	return n
}

// waitState reads id: "held", "waiting:<position>", "expired" or the error.
func (e *env) waitState(shop int64, id uuid.UUID) string {
	e.t.Helper()
	h, err := e.e.Hold(ctxb(), shop, id)
	var we *holdfast.WaitlistedError
	switch {
	case err == nil:
		return string(h.Status)
	case errors.As(err, &we):
		return fmt.Sprintf("waiting:%d", we.Position)
	case errors.Is(err, holdfast.ErrWaitExpired):
		return "expired"
	case errors.Is(err, holdfast.ErrWaitCancelled):
		return "cancelled"
	case errors.Is(err, holdfast.ErrWaitUnservable):
		return "unservable"
	}
	return err.Error()
}

func testWaitlist(t *testing.T, h *Harness) {
	t.Parallel()
	t.Run("FirstComeFirstServed", func(t *testing.T) { testWaitlistFCFS(t, h) })
	t.Run("NoNewBuyerJumpsTheQueue", func(t *testing.T) { testWaitlistNoJump(t, h) })
	t.Run("Expiry", func(t *testing.T) { testWaitlistExpiry(t, h) })
	t.Run("WholeCarts", func(t *testing.T) { testWaitlistWholeCarts(t, h) })
	t.Run("Answers", func(t *testing.T) { testWaitlistAnswers(t, h) })
	t.Run("BadInputWritesNothing", func(t *testing.T) { testWaitlistBadInput(t, h) })
	// issue 24 items 4-6
	t.Run("ShopsServedIndependently", func(t *testing.T) { testWaitlistShops(t, h) })
	t.Run("UnservableWaitEnds", func(t *testing.T) { testWaitlistUnservable(t, h) })
	t.Run("ReleaseCancelsWait", func(t *testing.T) { testWaitlistRelease(t, h) })
	t.Run("ReadIsOneSnapshot", func(t *testing.T) { testWaitlistReadSnapshot(t, h) })
	t.Run("OtherLinesConflict", func(t *testing.T) { testWaitlistOtherLines(t, h) })
	t.Run("LevelAndKeyEvents", func(t *testing.T) { testWaitlistLevel(t, h) })
	t.Run("KeysRoundRobin", func(t *testing.T) { testWaitlistRoundRobin(t, h) })
	t.Run("ReleaseRacesGrant", func(t *testing.T) { testWaitlistReleaseRace(t, h) })
	// issue 24 items 4-6, review
	t.Run("ExpiredStays", func(t *testing.T) { testWaitlistExpiredStays(t, h) })
	t.Run("SafetyRaiseEnds", func(t *testing.T) { testWaitlistSafetyEnds(t, h) })
	t.Run("SellableZero", func(t *testing.T) { testWaitlistSellableZero(t, h) })
	t.Run("ChangeAnswer", func(t *testing.T) { testWaitlistChangeAnswer(t, h) })
	t.Run("LifecycleAnswers", func(t *testing.T) { testWaitlistLifecycleAnswers(t, h) })
	t.Run("SafetyKeyEvents", func(t *testing.T) { testSafetyKeyEvents(t, h) })
}

// testWaitlistFCFS enqueues waiters concurrently (their positions are
// their order), then returns units one by one — by release, by expiry and
// sweep, by restock — and checks each goes to the next waiter in order.
func testWaitlistFCFS(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{Conns: 24})
		k := key(1, 5)
		e.stock(k, 4)
		holders := make([]uuid.UUID, 4)
		for i := range holders {
			holders[i] = e.mustReserve(1, one(5, 1), time.Duration(10+i)*time.Minute)
		}
		const n = 8
		ids := make([]uuid.UUID, n)
		pos := make([]int, n)
		var bad errorSink
		var wg sync.WaitGroup
		for i := range ids {
			ids[i] = uuid.New()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.waitFor(1, ids[i], one(5, 1), 14*time.Minute)
				var we *holdfast.WaitlistedError
				if !errors.As(err, &we) {
					bad.add("waiter %d: %v, want *WaitlistedError", i, err)
					return
				}
				pos[i] = we.Position
			}()
		}
		wg.Wait()
		bad.check(t)
		order := make([]uuid.UUID, n) // order[p-1] is the waiter at position p
		for i, p := range pos {
			if p < 1 || p > n || order[p-1] != uuid.Nil {
				t.Fatalf("positions %v are not 1..%d", pos, n)
			}
			order[p-1] = ids[i]
		}
		e.checkInvariant(false)
		// Each return, one unit at a time, goes to the head of the queue.
		returns := []func(){
			func() { e.release(1, holders[0]) },
			func() { e.release(1, holders[1]) },
			func() { e.Clock.Advance(12*time.Minute + time.Second); e.sweepNow() }, // holders[2] expires
			func() { e.stock(k, 5) },                                               // restock one
			func() { e.release(1, holders[3]) },
		}
		for step, ret := range returns {
			ret()
			// The unit is back, not served yet: still not for a new buyer.
			if _, err := e.reserve(1, uuid.New(), one(5, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
				t.Fatalf("a new buyer right after return %d: %v, want ErrInsufficientStock", step+1, err)
			}
			e.serve()
			for p, id := range order {
				want := fmt.Sprintf("waiting:%d", p-step)
				if p <= step {
					want = "held"
				}
				if got := e.waitState(1, id); got != want {
					t.Fatalf("after return %d, the waiter at position %d: %s, want %s", step+1, p+1, got, want)
				}
			}
			if _, err := e.reserve(1, uuid.New(), one(5, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
				t.Fatalf("a new buyer after return %d: %v, want ErrInsufficientStock", step+1, err)
			}
			e.checkInvariant(false)
		}
		// Each grant is announced, in grant order, with the hold's expiry.
		var held []uuid.UUID
		for _, ev := range e.waitEvents(1) {
			if ev.Type != holdfast.EventWaitlistHeld {
				t.Fatalf("event %+v, want only waitlist.held", ev)
			}
			if hh := e.hold(1, *ev.CheckoutID); ev.ExpiresAt == nil || !ev.ExpiresAt.Equal(hh.ExpiresAt) || len(ev.Lines) != 1 || ev.Lines[0] != one(5, 1)[0] {
				t.Fatalf("event %+v for hold %+v", ev, hh)
			}
			held = append(held, *ev.CheckoutID)
		}
		if len(held) != len(returns) {
			t.Fatalf("%d waitlist.held events, want %d", len(held), len(returns))
		}
		for i, id := range held {
			if id != order[i] {
				t.Fatalf("waitlist.held event %d is for the waiter at position %d's checkout %s, want %s", i, i+1, id, order[i])
			}
		}
		// A granted waiter's hold is an ordinary hold: claimable.
		if _, err := e.e.Claim(ctxb(), 1, order[0]); err != nil {
			t.Fatalf("claim a granted waiter: %v", err)
		}
	})
}

// testWaitlistNoJump races new buyers against each return of a unit (and,
// every other round, two passes of the server), then sends more once it is
// back: while waiters exist none of them gets it, and every unit goes to
// the queue in order.
func testWaitlistNoJump(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{Conns: 24})
		k := key(2, 6)
		rounds, buyers := 4, 8
		if long() {
			rounds, buyers = 10, 16
		}
		e.stock(k, rounds)
		holders := make([]uuid.UUID, rounds)
		for i := range holders {
			holders[i] = e.mustReserve(2, one(6, 1), 0)
		}
		waiters := make([]uuid.UUID, rounds)
		for i := range waiters {
			waiters[i] = uuid.New()
			if p := e.mustWait(2, waiters[i], one(6, 1), 10*time.Minute); p != i+1 {
				t.Fatalf("waiter %d at position %d", i, p)
			}
		}
		for r := range rounds {
			var bad errorSink
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range buyers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, err := e.reserve(2, uuid.New(), one(6, 1))
					if !errors.Is(err, holdfast.ErrInsufficientStock) {
						bad.add("round %d: a new buyer: %v, want ErrInsufficientStock", r, err)
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := e.e.Release(ctxb(), 2, holders[r]); err != nil {
					bad.add("round %d: release: %v", r, err)
				}
			}()
			if r%2 == 1 {
				// Two passes of the server (two replicas) race too: one
				// unit, one grant, to the head of the queue.
				for range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						if _, err := e.e.ServeWaitlist(ctxb()); err != nil {
							bad.add("round %d: serve: %v", r, err)
						}
					}()
				}
			}
			close(start)
			wg.Wait()
			// The unit is back and unserved: more buyers at once.
			for range buyers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := e.reserve(2, uuid.New(), one(6, 1))
					if !errors.Is(err, holdfast.ErrInsufficientStock) {
						bad.add("round %d: a new buyer after the release: %v, want ErrInsufficientStock", r, err)
					}
				}()
			}
			wg.Wait()
			bad.check(t)
			e.serve()
			for i, id := range waiters {
				want := fmt.Sprintf("waiting:%d", i-r)
				if i <= r {
					want = "held"
				}
				if got := e.waitState(2, id); got != want {
					t.Fatalf("round %d: waiter %d: %s, want %s", r, i, got, want)
				}
			}
			e.checkInvariant(false)
		}
		if l := e.level(k); l.Held != rounds {
			t.Fatalf("after the queue: %+v, want %d held", l, rounds)
		}
	})
}

// testWaitlistExpiry: a wait that runs out ends (Hold and a retry answer
// ErrWaitExpired), is never granted, and the key serves new buyers again.
func testWaitlistExpiry(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		k := key(3, 7)
		e.stock(k, 2)
		holder := e.mustReserve(3, one(7, 2), time.Hour)
		w1, w2 := uuid.New(), uuid.New()
		e.mustWait(3, w1, one(7, 1), time.Minute)
		e.mustWait(3, w2, one(7, 1), 3*time.Minute)
		e.Clock.Advance(2 * time.Minute)
		// Past its wait, before any pass: already expired, never granted.
		if got := e.waitState(3, w1); got != "expired" {
			t.Fatalf("w1 past its wait: %s, want expired", got)
		}
		// The read that answered it expired ended it (waitlist.expired):
		// the pass finds nothing more to end.
		if n := e.serve(); n != 0 {
			t.Fatalf("the pass ended %d waits, want 0 (the read ended w1)", n)
		}
		if got := e.waitState(3, w2); got != "waiting:1" {
			t.Fatalf("w2 once w1 expired: %s, want waiting:1", got)
		}
		if _, err := e.waitFor(3, w1, one(7, 1), time.Minute); !errors.Is(err, holdfast.ErrWaitExpired) {
			t.Fatalf("a retry of an expired wait: %v, want ErrWaitExpired", err)
		}
		e.Clock.Advance(2 * time.Minute)
		e.serve()
		if got := e.waitState(3, w2); got != "expired" {
			t.Fatalf("w2 past its wait: %s, want expired", got)
		}
		evs := e.waitEvents(3)
		if len(evs) != 2 || evs[0].Type != holdfast.EventWaitlistExpired || *evs[0].CheckoutID != w1 ||
			evs[1].Type != holdfast.EventWaitlistExpired || *evs[1].CheckoutID != w2 {
			t.Fatalf("events %+v, want waitlist.expired for w1 then w2", evs)
		}
		// No waiters left: returned units are for everyone again.
		e.release(3, holder)
		for range 2 {
			e.mustReserve(3, one(7, 1), 0)
		}
		if l := e.level(k); l.Held != 2 {
			t.Fatalf("after the queue emptied: %+v", l)
		}
	})
}

// testWaitlistWholeCarts: a waiting cart is held whole or not at all; the
// units of its first key to come back wait for it (nobody else gets them)
// until the rest comes back.
func testWaitlistWholeCarts(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		a, b := key(4, 1), key(4, 2)
		e.stock(a, 2)
		e.stock(b, 3)
		x := e.mustReserve(4, one(1, 2), 0)
		y := e.mustReserve(4, one(2, 3), 0)
		cart := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}, {ItemID: 2, LocationID: 1, Quantity: 1}}
		w := uuid.New()
		e.mustWait(4, w, cart, 10*time.Minute)
		small := uuid.New()
		if p := e.mustWait(4, small, one(2, 1), 10*time.Minute); p != 2 {
			t.Fatalf("a cart behind w on key b: position %d, want 2", p)
		}
		e.release(4, x)
		e.serve()
		if got := e.waitState(4, w); got != "waiting:1" {
			t.Fatalf("w with only key a back: %s", got)
		}
		if l := e.level(a); l.Held != 0 {
			t.Fatalf("a partial hold: %+v", l)
		}
		if _, err := e.reserve(4, uuid.New(), one(1, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("a new buyer of key a while w waits: %v, want ErrInsufficientStock", err)
		}
		e.checkInvariant(false)
		e.release(4, y)
		e.serve()
		if got := e.waitState(4, w); got != "held" {
			t.Fatalf("w once both keys are back: %s", got)
		}
		if got := e.waitState(4, small); got != "held" {
			t.Fatalf("the cart behind w: %s", got)
		}
		hw := e.hold(4, w)
		if len(hw.Lines) != 2 || hw.Lines[0] != cart[0] || hw.Lines[1] != cart[1] {
			t.Fatalf("w's hold: %+v", hw)
		}
		if la, lb := e.level(a), e.level(b); la.Held != 2 || lb.Held != 2 {
			t.Fatalf("levels: %+v %+v", la, lb)
		}
		// Key b is free of waiters: its last unit sells.
		e.mustReserve(4, one(2, 1), 0)
	})
}

// testWaitlistAnswers: when a reservation waits and when it does not, and
// what its retries answer.
func testWaitlistAnswers(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(5, 1)
	// Nothing held: no unit will come back, so no wait.
	if _, err := e.waitFor(5, uuid.New(), one(1, 1), 10*time.Minute); !isShortNotWaiting(err) {
		t.Fatalf("no stock, no holds: %v, want ErrInsufficientStock", err)
	}
	e.stock(k, 3)
	holder := e.mustReserve(5, one(1, 3), 0)
	// More than the stock: returns can never serve it.
	if _, err := e.waitFor(5, uuid.New(), one(1, 4), 10*time.Minute); !isShortNotWaiting(err) {
		t.Fatalf("more than available: %v, want ErrInsufficientStock", err)
	}
	// Without Wait: short, as before.
	if _, err := e.reserve(5, uuid.New(), one(1, 1)); !isShortNotWaiting(err) {
		t.Fatalf("no wait asked: %v", err)
	}
	w := uuid.New()
	e.mustWait(5, w, one(1, 2), 10*time.Minute)
	// A retry answers the wait; other lines are a conflict.
	if p := e.mustWait(5, w, one(1, 2), 10*time.Minute); p != 1 {
		t.Fatalf("retry: position %d", p)
	}
	if _, err := e.waitFor(5, w, one(1, 1), 10*time.Minute); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
		t.Fatalf("same checkout, other lines: %v, want ErrIdempotencyConflict", err)
	}
	e.release(5, holder)
	e.serve()
	hw, err := e.waitFor(5, w, one(1, 2), 10*time.Minute)
	if err != nil || !hw.Replayed || hw.Status != holdfast.StatusHeld {
		t.Fatalf("retry once granted: %+v %v, want the hold, replayed", hw, err)
	}
	// The granted hold has the normal TTL from the grant.
	if !hw.ExpiresAt.Equal(hw.CreatedAt.Add(holdfast.HoldTTLDefault)) {
		t.Fatalf("granted hold: %+v, want the default TTL", hw)
	}
	// The queue is empty: the last unit sells to anyone.
	e.mustReserve(5, one(1, 1), 0)
	if _, err := e.e.Hold(ctxb(), 5, uuid.New()); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("unknown checkout: %v", err)
	}
}

func isShortNotWaiting(err error) bool {
	return errors.Is(err, holdfast.ErrInsufficientStock) && !errors.Is(err, holdfast.ErrWaitlisted)
}

// testWaitlistBadInput: a bad Wait is an *ArgumentError naming "wait",
// and nothing is written.
func testWaitlistBadInput(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0], WaitMax: time.Hour}, Options{})
	e.stock(key(6, 1), 1)
	e.mustReserve(6, one(1, 1), 0)
	rows := func() map[string]int {
		if e.Rows == nil {
			return nil
		}
		r, err := e.Rows(ctxb())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := rows()
	for _, d := range []time.Duration{-time.Second, time.Hour + time.Second} {
		_, err := e.waitFor(6, uuid.New(), one(1, 1), d)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != "wait" {
			t.Fatalf("wait %v: %v, want an *ArgumentError for wait", d, err)
		}
	}
	if after := rows(); !maps.Equal(before, after) {
		t.Fatalf("rows changed: %v -> %v", before, after)
	}
	if _, err := e.e.Hold(ctxb(), 6, uuid.Nil); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Fatalf("hold of a nil checkout: %v", err)
	}
}

// waitEvents returns the waitlist events of a shop's feed, in order.
func (e *env) waitEvents(shop int64) []holdfast.Event {
	e.t.Helper()
	var out []holdfast.Event
	for _, ev := range e.events(shop, 0) {
		if ev.Type == holdfast.EventWaitlistHeld || ev.Type == holdfast.EventWaitlistExpired {
			if ev.CheckoutID == nil {
				e.t.Fatalf("waitlist event without a checkout: %+v", ev)
			}
			out = append(out, ev)
		}
	}
	return out
}

// release releases id or fails the test.
func (e *env) release(shop int64, id uuid.UUID) {
	e.t.Helper()
	if _, err := e.e.Release(ctxb(), shop, id); err != nil {
		e.t.Fatalf("release %s: %v", id, err)
	}
}

// sweepNow sweeps without moving the clock.
func (e *env) sweepNow() {
	e.t.Helper()
	if _, err := e.e.SweepOnce(ctxb()); err != nil {
		e.t.Fatalf("sweep: %v", err)
	}
}

// testWaitlistShops: one shop's waiters that cannot be served — more of
// them than one pass of the server used to consider — do not hold up
// another shop's: each shop's (each key's) queue is served on its own.
func testWaitlistShops(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: 24})
	a, b := key(7, 1), key(8, 1)
	e.stock(a, 1)
	e.stock(b, 1)
	e.mustReserve(7, one(1, 1), time.Hour)
	holder := e.mustReserve(8, one(1, 1), time.Hour)
	// Shop 7: more waiters than a scan window, none of them servable.
	n := holdfast.WaitlistScanMax + 1
	ids := make(chan uuid.UUID, n)
	for range n {
		ids <- uuid.New()
	}
	close(ids)
	var bad errorSink
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if _, err := e.waitFor(7, id, one(1, 1), 10*time.Minute); !errors.Is(err, holdfast.ErrWaitlisted) {
					bad.add("shop 7 waiter: %v, want ErrWaitlisted", err)
				}
			}
		}()
	}
	wg.Wait()
	bad.check(t)
	// Shop 8's waiter comes after all of them; its unit comes back.
	w := uuid.New()
	if p := e.mustWait(8, w, one(1, 1), 10*time.Minute); p != 1 {
		t.Fatalf("shop 8's waiter at position %d, want 1", p)
	}
	e.release(8, holder)
	for range 3 {
		e.serve()
	}
	if got := e.waitState(8, w); got != "held" {
		t.Fatalf("shop 8's waiter after its unit came back (shop 7 has %d waiters): %s, want held", n, got)
	}
	if l := e.level(a); l.Held != 1 {
		t.Fatalf("shop 7's key: %+v, want its one hold", l)
	}
}

// testWaitlistUnservable: a waiting cart that comes to ask more than could
// ever come back (a held unit is claimed) ends at once, and the key's
// free units sell again; a fresh checkout id asking the same is refused
// at entry, so one buyer cannot freeze the key again.
func testWaitlistUnservable(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(9, 1)
	e.stock(k, 10)
	holder := e.mustReserve(9, one(1, 1), time.Hour)
	w := uuid.New()
	e.mustWait(9, w, one(1, 10), 10*time.Minute)
	// Fair while the held unit may come back: nobody else gets the 9.
	if _, err := e.reserve(9, uuid.New(), one(1, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
		t.Fatalf("a new buyer while w waits: %v, want ErrInsufficientStock", err)
	}
	if _, err := e.e.Claim(ctxb(), 9, holder); err != nil {
		t.Fatalf("claim the holder: %v", err)
	}
	// Told at once: the claim ended the wait.
	if got := e.waitState(9, w); got != "unservable" {
		t.Fatalf("w once its 10th unit was claimed (9 available): %s, want unservable", got)
	}
	e.mustReserve(9, one(1, 1), 0)
	e.serve()
	if got := e.waitState(9, w); got != "unservable" {
		t.Fatalf("w after a pass of the server: %s, want unservable", got)
	}
	if _, err := e.waitFor(9, w, one(1, 10), 10*time.Minute); !errors.Is(err, holdfast.ErrWaitUnservable) {
		t.Fatalf("a retry of w: %v, want ErrWaitUnservable", err)
	}
	// A fresh checkout asking the same is refused at entry: short, no wait.
	if _, err := e.waitFor(9, uuid.New(), one(1, 10), 10*time.Minute); !isShortNotWaiting(err) {
		t.Fatalf("a fresh checkout asking 10 of 9: %v, want ErrInsufficientStock without a wait", err)
	}
	// The key is no longer frozen: its other 8 sell.
	if l := e.level(k); l.Sellable != 8 {
		t.Fatalf("level after the wait ended: %+v, want sellable 8", l)
	}
	e.mustReserve(9, one(1, 8), 0)
	for _, ev := range e.waitEvents(9) {
		if ev.Type == holdfast.EventWaitlistHeld {
			t.Fatalf("event %+v: the unservable wait was granted", ev)
		}
	}
	// A stock reduction below the waiting cart ends it too, at once.
	k2 := key(9, 2)
	e.stock(k2, 5)
	e.mustReserve(9, one(2, 1), time.Hour)
	w2 := uuid.New()
	e.mustWait(9, w2, one(2, 5), 10*time.Minute)
	e.stock(k2, 4)
	if got := e.waitState(9, w2); got != "unservable" {
		t.Fatalf("w2 once the stock went from 5 to 4: %s, want unservable", got)
	}
	e.mustReserve(9, one(2, 3), 0)
}

// testWaitlistRelease: releasing a waiting checkout cancels its wait (the
// answer says so, and so does every later one); it is never granted, and
// the waiter behind it moves up.
func testWaitlistRelease(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(10, 1)
	e.stock(k, 1)
	holder := e.mustReserve(10, one(1, 1), time.Hour)
	w1, w2 := uuid.New(), uuid.New()
	e.mustWait(10, w1, one(1, 1), 10*time.Minute)
	e.mustWait(10, w2, one(1, 1), 10*time.Minute)
	if h, err := e.e.Release(ctxb(), 10, w1); !errors.Is(err, holdfast.ErrWaitCancelled) {
		t.Fatalf("release of a waiting checkout: %+v %v, want ErrWaitCancelled", h, err)
	}
	if h, err := e.e.Release(ctxb(), 10, w1); !errors.Is(err, holdfast.ErrWaitCancelled) {
		t.Fatalf("release again: %+v %v, want ErrWaitCancelled", h, err)
	}
	if got := e.waitState(10, w1); got != "cancelled" {
		t.Fatalf("w1 after its release: %s, want cancelled", got)
	}
	if got := e.waitState(10, w2); got != "waiting:1" {
		t.Fatalf("w2 once w1 was cancelled: %s, want waiting:1", got)
	}
	e.release(10, holder)
	e.serve()
	e.serve()
	if got := e.waitState(10, w1); got != "cancelled" {
		t.Fatalf("w1 once the unit came back: %s, want cancelled (never granted)", got)
	}
	if got := e.waitState(10, w2); got != "held" {
		t.Fatalf("w2 once the unit came back: %s, want held", got)
	}
	if _, err := e.waitFor(10, w1, one(1, 1), 10*time.Minute); !errors.Is(err, holdfast.ErrWaitCancelled) {
		t.Fatalf("a retry of w1: %v, want ErrWaitCancelled", err)
	}
	// The last waiter cancelled: the key sells again.
	e.stock(k, 2)
	w3 := uuid.New()
	e.mustWait(10, w3, one(1, 2), 10*time.Minute)
	if _, err := e.e.Release(ctxb(), 10, w3); !errors.Is(err, holdfast.ErrWaitCancelled) {
		t.Fatalf("release of w3: %v, want ErrWaitCancelled", err)
	}
	e.serve()
	e.mustReserve(10, one(1, 1), 0)
	for _, ev := range e.waitEvents(10) {
		if ev.Type == holdfast.EventWaitlistHeld && *ev.CheckoutID != w2 {
			t.Fatalf("event %+v: a cancelled wait was granted", ev)
		}
	}
}

// testWaitlistReadSnapshot reads a waiting checkout from several
// goroutines while its grant lands: each read answers the wait or the
// hold, never ErrNotFound (hold and wait are read as one snapshot).
func testWaitlistReadSnapshot(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: 24})
	rounds := 20
	if long() {
		rounds = 100
	}
	for r := range rounds {
		k := key(11, int64(r+1))
		e.stock(k, 1)
		holder := e.mustReserve(11, one(int64(r+1), 1), time.Hour)
		w := uuid.New()
		e.mustWait(11, w, one(int64(r+1), 1), 10*time.Minute)
		var bad errorSink
		var wg sync.WaitGroup
		done := make(chan struct{})
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				deadline := time.Now().Add(30 * time.Second)
				for time.Now().Before(deadline) {
					granted := false // the grant committed before this read began
					select {
					case <-done:
						granted = true
					default:
					}
					h, err := e.e.Hold(ctxb(), 11, w)
					switch {
					case err == nil && h.Status == holdfast.StatusHeld:
						return
					case errors.Is(err, holdfast.ErrWaitlisted):
						if granted {
							bad.add("round %d: a read after the grant: %v, want the hold", r, err)
							return
						}
					default:
						bad.add("round %d: a read while the grant lands: %+v %v, want the wait or the hold", r, h, err)
						return
					}
				}
				bad.add("round %d: no hold within 30s", r)
			}()
		}
		e.release(11, holder)
		e.serve()
		close(done)
		wg.Wait()
		bad.check(t)
	}
}

// testWaitlistOtherLines: a waiting checkout reserving other lines under
// its id is an idempotency conflict, with or without a wait; the same
// lines without a wait answer the wait.
func testWaitlistOtherLines(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		a, b := key(12, 1), key(12, 2)
		e.stock(a, 1)
		e.stock(b, 5)
		e.mustReserve(12, one(1, 1), time.Hour)
		w := uuid.New()
		e.mustWait(12, w, one(1, 1), 10*time.Minute)
		if h, err := e.reserve(12, w, one(2, 1)); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("the waiting checkout reserving other (free) lines: %+v %v, want ErrIdempotencyConflict", h, err)
		}
		if h, err := e.waitFor(12, w, one(2, 1), 10*time.Minute); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("the same with a wait: %+v %v, want ErrIdempotencyConflict", h, err)
		}
		if h, err := e.reserve(12, w, one(1, 1)); !errors.Is(err, holdfast.ErrWaitlisted) {
			t.Fatalf("the waiting checkout's own lines without a wait: %+v %v, want ErrWaitlisted", h, err)
		}
		if l := e.level(b); l.Held != 0 {
			t.Fatalf("key b: %+v, want nothing held", l)
		}
		e.checkInvariant(false)
	})
}

// testWaitlistLevel: Level (Sellable) says what a new buyer would be
// told — nothing while a key has waiters, never the safety stock — and
// key.sold_out / key.back_in_stock say the same.
func testWaitlistLevel(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	// Safety stock: 5 available, 2 withheld, 3 held: sold out.
	s := key(13, 1)
	e.stock(s, 5)
	if _, err := e.e.SetSafetyStock(ctxb(), s, 2); err != nil {
		t.Fatalf("safety stock: %v", err)
	}
	e.mustReserve(13, one(1, 3), time.Hour)
	if l := e.level(s); l.Sellable != 0 {
		t.Fatalf("level with the safety stock left: %+v, want sellable 0", l)
	}
	if got := e.keyEvents(13, 1); got != "key.sold_out" {
		t.Fatalf("key events of a key down to its safety stock: %q, want key.sold_out", got)
	}
	// Waiters: 10 available, 1 held, a waiter for 10; 9 are free but no
	// new buyer gets them.
	k := key(13, 2)
	e.stock(k, 10)
	holder := e.mustReserve(13, one(2, 1), time.Hour)
	w := uuid.New()
	e.mustWait(13, w, one(2, 10), 10*time.Minute)
	_, err := e.reserve(13, uuid.New(), one(2, 1))
	var ise *holdfast.InsufficientStockError
	if !errors.As(err, &ise) || len(ise.Lines) != 1 {
		t.Fatalf("a new buyer while w waits: %v, want ErrInsufficientStock", err)
	}
	if l := e.level(k); l.Sellable != ise.Lines[0].Sellable {
		t.Fatalf("level while w waits: %+v; a new buyer is told sellable %d", l, ise.Lines[0].Sellable)
	}
	if got := e.keyEvents(13, 2); got != "key.sold_out" {
		t.Fatalf("key events of a key with a waiter: %q, want key.sold_out", got)
	}
	// The unit comes back: still nothing for a new buyer until w is served.
	e.release(13, holder)
	if l := e.level(k); l.Sellable != 0 {
		t.Fatalf("level after the release, w not served yet: %+v, want sellable 0", l)
	}
	if got := e.keyEvents(13, 2); got != "key.sold_out" {
		t.Fatalf("key events after the release, w not served yet: %q, want key.sold_out only", got)
	}
	e.serve()
	if got := e.waitState(13, w); got != "held" {
		t.Fatalf("w: %s, want held", got)
	}
	// All 10 held by w: sold out still, and no back-in-stock was reported.
	if got := e.keyEvents(13, 2); got != "key.sold_out" {
		t.Fatalf("key events once w holds all 10: %q, want key.sold_out only", got)
	}
	e.release(13, w)
	if got := e.keyEvents(13, 2); got != "key.sold_out key.back_in_stock" {
		t.Fatalf("key events once w released: %q, want key.sold_out key.back_in_stock", got)
	}
	if l := e.level(k); l.Sellable != 10 {
		t.Fatalf("level once w released: %+v, want sellable 10", l)
	}
}

// keyEvents is the key events of a shop's item (location 1), in order,
// space-separated.
func (e *env) keyEvents(shop, item int64) string {
	e.t.Helper()
	var out []string
	for _, ev := range e.events(shop, 0) {
		if (ev.Type == holdfast.EventKeySoldOut || ev.Type == holdfast.EventKeyBackInStock) && ev.ItemID == item && ev.LocationID == 1 {
			out = append(out, string(ev.Type))
		}
	}
	return strings.Join(out, " ")
}

// testWaitlistRoundRobin: more keys with waiters than one pass serves
// (WaitlistKeysMax), none servable; a later shop's waiter is served within
// a few passes (the window goes round), not never.
func testWaitlistRoundRobin(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: 24})
	n := holdfast.WaitlistKeysMax + 1
	items := make(chan int64, n)
	for i := range n {
		items <- int64(i + 1)
	}
	close(items)
	var bad errorSink
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range items {
				q := 1
				if _, err := e.e.ChangeStock(ctxb(), holdfast.StockChange{Key: key(14, item), Set: &q, Reason: "test stock"}); err != nil {
					bad.add("stock: %v", err)
					return
				}
				if _, err := e.reserve(14, uuid.New(), one(item, 1)); err != nil {
					bad.add("hold: %v", err)
					return
				}
				if _, err := e.waitFor(14, uuid.New(), one(item, 1), 10*time.Minute); !errors.Is(err, holdfast.ErrWaitlisted) {
					bad.add("wait: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	bad.check(t)
	e.stock(key(15, 1), 1)
	holder := e.mustReserve(15, one(1, 1), time.Hour)
	w := uuid.New()
	e.mustWait(15, w, one(1, 1), 10*time.Minute)
	e.release(15, holder)
	passes := 0
	for ; passes < 3 && e.waitState(15, w) != "held"; passes++ {
		e.serve()
	}
	if got := e.waitState(15, w); got != "held" {
		t.Fatalf("shop 15's waiter after %d passes (%d keys of shop 14 wait): %s, want held", passes, n, got)
	}
}

// testWaitlistReleaseRace releases a waiting checkout while its unit comes
// back and the server grants: the release either cancels the wait (then it
// is never granted) or releases the granted hold; either way nothing stays
// held for it.
func testWaitlistReleaseRace(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: 24})
	rounds := 16
	if long() {
		rounds = 64
	}
	for r := range rounds {
		item := int64(r + 1)
		e.stock(key(16, item), 1)
		holder := e.mustReserve(16, one(item, 1), time.Hour)
		w := uuid.New()
		e.mustWait(16, w, one(item, 1), 10*time.Minute)
		var wg sync.WaitGroup
		var hw *holdfast.Hold
		var errW error
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			hw, errW = e.e.Release(ctxb(), 16, w)
		}()
		go func() {
			defer wg.Done()
			<-start
			e.release(16, holder)
			e.serve()
		}()
		close(start)
		wg.Wait()
		e.serve()
		switch {
		case errors.Is(errW, holdfast.ErrWaitCancelled):
			if got := e.waitState(16, w); got != "cancelled" {
				t.Fatalf("round %d: w cancelled, then: %s", r, got)
			}
		case errW == nil && hw.Status == holdfast.StatusReleased:
		default:
			t.Fatalf("round %d: release of w: %+v %v, want ErrWaitCancelled or its released hold", r, hw, errW)
		}
		if l := e.level(key(16, item)); l.Held != 0 {
			t.Fatalf("round %d: %+v after the release of w (%v): want nothing held", r, l, errW)
		}
	}
	e.checkInvariant(false)
}
