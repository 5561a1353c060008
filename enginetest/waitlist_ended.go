package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// The waitlist's outcomes after review (issue 24 items 4-6, second pass).

// allWaitEvents is every waitlist.* event type of a shop's feed for id, in
// order, space-separated.
func (e *env) allWaitEvents(shop int64, id uuid.UUID) []string {
	e.t.Helper()
	var out []string
	for _, ev := range e.events(shop, 0) {
		if len(ev.Type) > 9 && ev.Type[:9] == "waitlist." && ev.CheckoutID != nil && *ev.CheckoutID == id {
			out = append(out, string(ev.Type))
		}
	}
	return out
}

// testWaitlistExpiredStays: a wait that ran out keeps that outcome: its
// expiry is recorded (waitlist.expired) when a read observes it, before
// any pass of the server; a release answers ErrWaitExpired and changes
// nothing.
func testWaitlistExpiredStays(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(20, 1)
	e.stock(k, 5)
	e.mustReserve(20, one(1, 1), time.Hour)
	w := uuid.New()
	e.mustWait(20, w, one(1, 5), time.Second)
	e.Clock.Advance(2 * time.Second)
	if got := e.waitState(20, w); got != "expired" {
		t.Fatalf("w past its wait: %s, want expired", got)
	}
	if got := e.allWaitEvents(20, w); len(got) != 2 || got[1] != string(holdfast.EventWaitlistExpired) {
		t.Fatalf("w's events once a read saw it expired: %v, want waitlist.waiting waitlist.expired", got)
	}
	if h, err := e.e.Release(ctxb(), 20, w); !errors.Is(err, holdfast.ErrWaitExpired) {
		t.Fatalf("release of an expired wait: %+v %v, want ErrWaitExpired", h, err)
	}
	if got := e.waitState(20, w); got != "expired" {
		t.Fatalf("w after a release: %s, want expired", got)
	}
	e.serve()
	if got := e.allWaitEvents(20, w); len(got) != 2 || got[0] != string(holdfast.EventWaitlistWaiting) || got[1] != string(holdfast.EventWaitlistExpired) {
		t.Fatalf("w's events: %v, want waitlist.waiting waitlist.expired", got)
	}
	// Released before any read: the same.
	w2 := uuid.New()
	e.mustWait(20, w2, one(1, 5), time.Second)
	e.Clock.Advance(2 * time.Second)
	if h, err := e.e.Release(ctxb(), 20, w2); !errors.Is(err, holdfast.ErrWaitExpired) {
		t.Fatalf("release of a wait past its end, never read: %+v %v, want ErrWaitExpired", h, err)
	}
	if got := e.allWaitEvents(20, w2); len(got) != 2 || got[1] != string(holdfast.EventWaitlistExpired) {
		t.Fatalf("w2's events: %v, want waitlist.waiting waitlist.expired", got)
	}
	// The key sells again.
	if l := e.level(k); l.Sellable != 4 {
		t.Fatalf("level once the waits expired: %+v, want sellable 4", l)
	}
}

// testWaitlistSafetyEnds: the end-of-wait rule uses the entry rule's bound
// (available less the safety stock): a safety raise that leaves a waiting
// cart asking more ends it at once; one that leaves it servable does not.
func testWaitlistSafetyEnds(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(21, 1)
	e.stock(k, 10)
	if _, err := e.e.SetSafetyStock(ctxb(), k, 2); err != nil {
		t.Fatal(err)
	}
	holder := e.mustReserve(21, one(1, 1), time.Hour)
	w := uuid.New()
	e.mustWait(21, w, one(1, 8), 10*time.Minute)
	l, err := e.e.SetSafetyStock(ctxb(), k, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.waitState(21, w); got != "unservable" {
		t.Fatalf("w (8) once the safety stock rose to 3 (10 available): %s, want unservable", got)
	}
	if l.Sellable != 6 {
		t.Fatalf("the safety change's answer: %+v, want sellable 6 (the wait ended)", l)
	}
	if l := e.level(k); l.Sellable != 6 {
		t.Fatalf("level: %+v, want sellable 6", l)
	}
	// The claim path too: safety raised while servable, then a claim.
	k2 := key(21, 2)
	e.stock(k2, 10)
	h2 := e.mustReserve(21, one(2, 2), time.Hour)
	w2 := uuid.New()
	e.mustWait(21, w2, one(2, 9), 10*time.Minute)
	if _, err := e.e.SetSafetyStock(ctxb(), k2, 1); err != nil {
		t.Fatal(err)
	}
	if got := e.waitState(21, w2); got != "waiting:1" {
		t.Fatalf("w2 (9 of 10, safety 1): %s, want waiting:1", got)
	}
	if _, err := e.e.Claim(ctxb(), 21, h2); err != nil {
		t.Fatal(err)
	}
	if got := e.waitState(21, w2); got != "unservable" {
		t.Fatalf("w2 (9) once 8 available, safety 1: %s, want unservable", got)
	}
	e.serve()
	if got := e.waitState(21, w); got != "unservable" {
		t.Fatalf("w after a pass: %s, want unservable", got)
	}
	_ = holder
}

// testWaitlistSellableZero: while a key has waiters, every short answer
// says sellable 0 — as Level does — on every path (the sold-out hint
// included), and so does a new wait's answer.
func testWaitlistSellableZero(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		k := key(22, 1)
		e.stock(k, 10)
		e.mustReserve(22, one(1, 1), time.Hour)
		e.mustWait(22, uuid.New(), one(1, 10), 10*time.Minute)
		if l := e.level(k); l.Sellable != 0 {
			t.Fatalf("level while a cart waits: %+v, want sellable 0", l)
		}
		for i := range 4 {
			_, err := e.reserve(22, uuid.New(), one(1, 1+i%2*9)) // 1, 10, 1, 10
			var ise *holdfast.InsufficientStockError
			if !errors.As(err, &ise) || len(ise.Lines) != 1 || ise.Lines[0].Sellable != 0 {
				t.Fatalf("new buyer %d while a cart waits: %v %+v, want insufficient stock with sellable 0", i, err, ise)
			}
		}
		_, err := e.waitFor(22, uuid.New(), one(1, 10), 10*time.Minute)
		var we *holdfast.WaitlistedError
		if !errors.As(err, &we) || len(we.Lines) != 1 || we.Lines[0].Sellable != 0 {
			t.Fatalf("a second wait: %v, want waiting with sellable 0", err)
		}
	})
}

// testWaitlistChangeAnswer: the stock change that ends a wait answers the
// level without it.
func testWaitlistChangeAnswer(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(23, 1)
	e.stock(k, 10)
	e.mustReserve(23, one(1, 1), time.Hour)
	w := uuid.New()
	e.mustWait(23, w, one(1, 10), 10*time.Minute)
	l, err := e.e.ChangeStock(ctxb(), holdfast.StockChange{Key: k, Delta: -1, Reason: "shrinkage"})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.waitState(23, w); got != "unservable" {
		t.Fatalf("w: %s, want unservable", got)
	}
	if l.Sellable != 8 {
		t.Fatalf("the change's answer: %+v, want sellable 8 (the wait it ended no longer freezes the key)", l)
	}
	if l := e.level(k); l.Sellable != 8 {
		t.Fatalf("level: %+v, want sellable 8", l)
	}
}

// testWaitlistLifecycleAnswers: claim, extend and edit of a waiting
// checkout answer ErrCheckoutWaiting (it holds nothing yet), and of an
// ended wait its outcome — as a read does — never ErrNotFound.
func testWaitlistLifecycleAnswers(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(24, 1)
	e.stock(k, 2)
	e.mustReserve(24, one(1, 2), time.Hour)
	w := uuid.New()
	e.mustWait(24, w, one(1, 1), 10*time.Minute)
	ops := map[string]func() error{
		"claim":       func() error { _, err := e.e.Claim(ctxb(), 24, w); return err },
		"claim lines": func() error { _, err := e.e.ClaimLines(ctxb(), 24, w, one(1, 1)); return err },
		"extend":      func() error { _, err := e.e.Extend(ctxb(), 24, w, time.Minute); return err },
		"edit": func() error {
			_, err := e.e.Edit(ctxb(), holdfast.EditParams{ShopID: 24, CheckoutID: w, Revision: 2, Lines: one(1, 1)})
			return err
		},
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, holdfast.ErrCheckoutWaiting) {
			t.Fatalf("%s of a waiting checkout: %v, want ErrCheckoutWaiting", name, err)
		}
	}
	if got := e.waitState(24, w); got != "waiting:1" {
		t.Fatalf("w after them: %s, want waiting:1", got)
	}
	if _, err := e.e.Release(ctxb(), 24, w); !errors.Is(err, holdfast.ErrWaitCancelled) {
		t.Fatalf("release of w: %v, want ErrWaitCancelled", err)
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, holdfast.ErrWaitCancelled) {
			t.Fatalf("%s of a cancelled wait: %v, want ErrWaitCancelled", name, err)
		}
	}
}

// testSafetyKeyEvents: a safety change that brings a key's sellable stock
// to 0 is followed by key.sold_out, and one that brings it back by
// key.back_in_stock (the change is a stock.changed event, reason safety).
func testSafetyKeyEvents(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(25, 1)
	e.stock(k, 5)
	e.mustReserve(25, one(1, 3), time.Hour)
	if got := e.keyEvents(25, 1); got != "" {
		t.Fatalf("key events with 2 sellable: %q, want none", got)
	}
	if l, err := e.e.SetSafetyStock(ctxb(), k, 2); err != nil || l.Sellable != 0 {
		t.Fatalf("safety 2: %+v %v, want sellable 0", l, err)
	}
	if got := e.keyEvents(25, 1); got != "key.sold_out" {
		t.Fatalf("key events once the safety stock took the last 2: %q, want key.sold_out", got)
	}
	if _, err := e.e.SetSafetyStock(ctxb(), k, 0); err != nil {
		t.Fatal(err)
	}
	if got := e.keyEvents(25, 1); got != "key.sold_out key.back_in_stock" {
		t.Fatalf("key events once the safety stock was removed: %q, want key.sold_out key.back_in_stock", got)
	}
	var reasons []string
	for _, ev := range e.events(25, 0) {
		if ev.Type == holdfast.EventStockChanged && ev.Reason == "safety" {
			reasons = append(reasons, ev.Reason)
			if ev.Delta == nil || *ev.Delta != 0 || ev.Available == nil || *ev.Available != 5 {
				t.Fatalf("safety event %+v, want delta 0, available 5", ev)
			}
		}
	}
	if len(reasons) != 2 {
		t.Fatalf("%d stock.changed events with reason safety, want 2", len(reasons))
	}
}
