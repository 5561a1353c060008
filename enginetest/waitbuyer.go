package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// A granted wait keeps its buyer: a waiter enqueued with a buyer id — a
// plain waitlist entry, or a drop's entrant queued by the draw — gets a
// hold that records the buyer, so the buyer's own retry of the checkout
// (same id, lines and buyer id) replays the hold, and the hold counts
// towards the buyer's limits; a grant that would take the buyer past a
// limit ends the wait as unservable instead.

func testWaitBuyer(t *testing.T, h *Harness) {
	t.Parallel()
	t.Run("DropGrantRetryReplays", func(t *testing.T) { testWaitBuyerDrop(t, h) })
	t.Run("WaitGrantRetryReplays", func(t *testing.T) { testWaitBuyerPlain(t, h) })
	t.Run("LimitAcrossGrant", func(t *testing.T) { testWaitBuyerLimit(t, h) })
	t.Run("WaitingRetryByBuyer", func(t *testing.T) { testWaitBuyerWaiting(t, h) })
}

// testWaitBuyerWaiting: a checkout still waiting is its buyer's: the
// buyer's retry answers the same wait, and a retry with another buyer id,
// or without one, is a conflict that leaves the wait as it was — as for a
// checkout that has a hold.
func testWaitBuyerWaiting(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{Conns: 8})
		e.stock(key(1, 7), 1)
		e.mustReserve(1, one(7, 1), 0)
		id := uuid.New()
		p := holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(7, 1), BuyerID: "dave", Wait: time.Minute}
		if _, err := e.e.Reserve(ctxb(), p); !errors.Is(err, holdfast.ErrWaitlisted) {
			t.Fatalf("dave waits: %v, want ErrWaitlisted", err)
		}
		if _, err := e.e.Reserve(ctxb(), p); !errors.Is(err, holdfast.ErrWaitlisted) {
			t.Fatalf("dave's retry while waiting: %v, want ErrWaitlisted (the same wait)", err)
		}
		for _, other := range []string{"dave-other", ""} {
			q := p
			q.BuyerID = other
			if _, err := e.e.Reserve(ctxb(), q); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
				t.Fatalf("a retry of dave's waiting checkout with buyer id %q: %v, want ErrIdempotencyConflict", other, err)
			}
		}
		if got := e.waitState(1, id); got != "waiting:1" {
			t.Fatalf("dave's wait after the conflicting retries: %s, want waiting", got)
		}
	})
}

// wantReplayed fails unless the buyer's retry of id (lines, buyer) answers
// its held hold, replayed, and another buyer's is a conflict.
func (e *env) wantReplayed(id uuid.UUID, lines []holdfast.Line, buyer string, wait time.Duration) {
	e.t.Helper()
	p := holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: lines, BuyerID: buyer, Wait: wait}
	got, err := e.e.Reserve(ctxb(), p)
	if err != nil || got == nil || !got.Replayed || got.Status != holdfast.StatusHeld || got.CheckoutID != id {
		e.t.Fatalf("the buyer's retry of its granted checkout: %+v %v, want its hold replayed", got, err)
	}
	p.BuyerID = buyer + "-other"
	if _, err := e.e.Reserve(ctxb(), p); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
		e.t.Fatalf("another buyer's retry of the granted checkout: %v, want ErrIdempotencyConflict", err)
	}
}

// testWaitBuyerDrop: a drop's entrant, granted after the draw, retries its
// reservation and gets its hold back; the hold counts towards its limit.
func testWaitBuyerDrop(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{Conns: 8})
		k := key(1, 7)
		e.stock(k, 1)
		other := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 2}
		e.stock(other, 5)
		if _, err := e.e.SetDrop(ctxb(), holdfast.DropParams{Key: k, StartsAt: e.Clock.Now(), Window: 10 * time.Second}); err != nil {
			t.Fatalf("SetDrop: %v", err)
		}
		id := uuid.New()
		if err := e.enter(1, 7, id, "alice"); !errors.Is(err, holdfast.ErrWaitlisted) {
			t.Fatalf("entry: %v, want ErrWaitlisted", err)
		}
		e.Clock.Advance(11 * time.Second)
		e.serve()
		if got := e.waitState(1, id); got != "held" {
			t.Fatalf("the only entrant after the draw: %s, want held", got)
		}
		e.wantReplayed(id, one(7, 1), "alice", 0)
		// The granted hold is alice's: with a limit of one, another unit
		// of the item (elsewhere) is over it.
		e.setBuyerLimit(1, 7, 1, 0)
		_, _, err := e.buyerReserve(1, "alice", []holdfast.Line{{ItemID: 7, LocationID: 2, Quantity: 1}}, 0)
		wantBuyerLimit(t, err, 7, 1, 1, 1)
	})
}

// testWaitBuyerPlain: a plain waiter with a buyer id, granted when a unit
// comes back, retries and gets its hold back; the hold counts towards its
// limit.
func testWaitBuyerPlain(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{Conns: 8})
		k := key(1, 7)
		e.stock(k, 1)
		other := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 2}
		e.stock(other, 5)
		e.setBuyerLimit(1, 7, 1, 0)
		first := e.mustReserve(1, one(7, 1), 0)
		id := uuid.New()
		p := holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(7, 1), BuyerID: "bob", Wait: time.Minute}
		if _, err := e.e.Reserve(ctxb(), p); !errors.Is(err, holdfast.ErrWaitlisted) {
			t.Fatalf("bob waits: %v, want ErrWaitlisted", err)
		}
		e.release(1, first)
		e.serve()
		if got := e.waitState(1, id); got != "held" {
			t.Fatalf("bob after the unit came back: %s, want held", got)
		}
		e.wantReplayed(id, one(7, 1), "bob", time.Minute)
		e.wantReplayed(id, one(7, 1), "bob", 0)
		_, _, err := e.buyerReserve(1, "bob", []holdfast.Line{{ItemID: 7, LocationID: 2, Quantity: 1}}, 0)
		wantBuyerLimit(t, err, 7, 1, 1, 1)
	})
}

// testWaitBuyerLimit: a buyer that waits and meanwhile takes its limit
// elsewhere is not granted past it: the wait ends as unservable (the
// grant would exceed the limit; checked at the grant, under the buyer's
// lock), the unit stays for others.
func testWaitBuyerLimit(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{Conns: 8})
		k := key(1, 7)
		e.stock(k, 1)
		other := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 2}
		e.stock(other, 5)
		e.setBuyerLimit(1, 7, 1, 0)
		first := e.mustReserve(1, one(7, 1), 0)
		id := uuid.New()
		p := holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(7, 1), BuyerID: "carol", Wait: time.Minute}
		if _, err := e.e.Reserve(ctxb(), p); !errors.Is(err, holdfast.ErrWaitlisted) {
			t.Fatalf("carol waits: %v, want ErrWaitlisted", err)
		}
		// While she waits she takes her limit at the other location.
		if _, _, err := e.buyerReserve(1, "carol", []holdfast.Line{{ItemID: 7, LocationID: 2, Quantity: 1}}, 0); err != nil {
			t.Fatalf("carol's other reservation: %v", err)
		}
		e.release(1, first)
		e.serve()
		if got := e.waitState(1, id); got != "unservable" {
			t.Fatalf("carol's wait once a grant would take her past her limit: %s, want unservable", got)
		}
		// The unit is anybody's again.
		if _, err := e.reserve(1, uuid.New(), one(7, 1)); err != nil {
			t.Fatalf("a new buyer after the wait ended: %v", err)
		}
	})
}
