package enginetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

func (e *env) merge(shop int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	return e.e.MergeCheckouts(ctxb(), shop, from, into)
}

func (e *env) reserveTTL(shop int64, lines []holdfast.Line, ttl time.Duration, buyer string) uuid.UUID {
	e.t.Helper()
	id := uuid.New()
	if _, err := e.e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: lines, TTL: ttl, BuyerID: buyer}); err != nil {
		e.t.Fatalf("reserve %+v: %v", lines, err)
	}
	return id
}

// mergeIntoErr fails unless err is a *MergeIntoError naming into and
// wrapping want.
func mergeIntoErr(t *testing.T, what string, err error, into uuid.UUID, want error) {
	t.Helper()
	var me *holdfast.MergeIntoError
	if !errors.As(err, &me) || !errors.Is(err, holdfast.ErrMergeInto) || !errors.Is(err, want) || me.Into != into {
		t.Fatalf("%s: %v, want a *MergeIntoError for %s wrapping %v", what, err, into, want)
	}
}

// testMerge: a merge sums the source's lines into the destination's (which
// keeps its expiry), ends the source released with MergedInto, keeps every
// unit held; a retry answers the same, Replayed; the source answers
// truthfully afterwards; an absent destination is created with the
// source's expiry; bad merges change nothing.
func testMerge(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{})
		k1, k2 := key(1, 1), key(1, 2)
		e.stock(k1, 20)
		e.stock(k2, 20)
		guest := e.reserveTTL(1, []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}, {ItemID: 2, LocationID: 1, Quantity: 1}}, 5*time.Minute, "")
		customer := e.reserveTTL(1, one(1, 3), 20*time.Minute, "")
		cust := e.hold(1, customer)
		after := int64(0)
		if ev := e.events(1, 0); len(ev) > 0 {
			after = ev[len(ev)-1].Cursor
		}

		got, err := e.merge(1, guest, customer)
		want := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 5}, {ItemID: 2, LocationID: 1, Quantity: 1}}
		if err != nil || got.Replayed || got.Status != holdfast.StatusHeld || got.CheckoutID != customer || !slices.Equal(got.Lines, want) ||
			!got.ExpiresAt.Equal(cust.ExpiresAt) || !got.Deadline.Equal(cust.Deadline) || got.Revision != cust.Revision+1 {
			t.Fatalf("merge: %+v %v, want the customer's hold with %+v, its expiry %v, revision %d", got, err, want, cust.ExpiresAt, cust.Revision+1)
		}
		if l := e.level(k1); l.Held != 5 {
			t.Fatalf("merge moved units of k1: %+v, want 5 held", l)
		}
		if l := e.level(k2); l.Held != 1 {
			t.Fatalf("merge moved units of k2: %+v, want 1 held", l)
		}
		src := e.hold(1, guest)
		if src.Status != holdfast.StatusReleased || src.Claimable || src.MergedInto == nil || *src.MergedInto != customer || src.EndedAt == nil {
			t.Fatalf("source after the merge: %+v, want released, merged into %s", src, customer)
		}

		// A retry answers the same, Replayed, and changes nothing.
		again, err := e.merge(1, guest, customer)
		if err != nil || !again.Replayed || !slices.Equal(again.Lines, want) || again.Revision != got.Revision {
			t.Fatalf("retried merge: %+v %v, want the same hold, Replayed", again, err)
		}
		if l := e.level(k1); l.Held != 5 {
			t.Fatalf("a retried merge moved units: %+v", l)
		}

		// The source answers its ended state.
		if _, err := e.e.Claim(ctxb(), 1, guest); !errors.Is(err, holdfast.ErrHoldReleased) {
			t.Fatalf("claim of the merged source: %v, want ErrHoldReleased", err)
		}
		if _, err := e.e.Extend(ctxb(), 1, guest, time.Minute); !errors.Is(err, holdfast.ErrHoldReleased) {
			t.Fatalf("extend of the merged source: %v, want ErrHoldReleased", err)
		}
		if r, err := e.e.Release(ctxb(), 1, guest); err != nil || !r.Replayed || r.Status != holdfast.StatusReleased {
			t.Fatalf("release of the merged source: %+v %v, want released, Replayed", r, err)
		}
		if l := e.level(k1); l.Held != 5 {
			t.Fatalf("the source's release gave units back: %+v", l)
		}
		// Merged elsewhere: released.
		if _, err := e.merge(1, guest, uuid.New()); !errors.Is(err, holdfast.ErrHoldReleased) {
			t.Fatalf("merge of a source merged elsewhere: %v, want ErrHoldReleased", err)
		}

		// Events: hold.released for the source, hold.edited for the destination.
		var types []string
		for _, ev := range e.events(1, after) {
			if ev.CheckoutID != nil && (*ev.CheckoutID == guest || *ev.CheckoutID == customer) {
				types = append(types, string(ev.Type)+" "+ev.CheckoutID.String())
				if ev.Type == holdfast.EventHoldReleased && (ev.MergedInto == nil || *ev.MergedInto != customer) {
					t.Fatalf("the source's hold.released event: %+v, want merged_into %s", ev, customer)
				}
				if ev.Type != holdfast.EventHoldReleased && ev.MergedInto != nil {
					t.Fatalf("event %+v carries merged_into", ev)
				}
			}
		}
		wantTypes := []string{"hold.released " + guest.String(), "hold.edited " + customer.String()}
		slices.Sort(types)
		slices.Sort(wantTypes)
		if !slices.Equal(types, wantTypes) {
			t.Fatalf("merge events: %v, want %v", types, wantTypes)
		}

		// Into an absent checkout: created with the source's lines and expiry.
		guest2 := e.reserveTTL(1, one(2, 2), 7*time.Minute, "")
		g2 := e.hold(1, guest2)
		fresh := uuid.New()
		created, err := e.merge(1, guest2, fresh)
		if err != nil || created.Replayed || created.CheckoutID != fresh || created.Status != holdfast.StatusHeld ||
			!slices.Equal(created.Lines, one(2, 2)) || !created.ExpiresAt.Equal(g2.ExpiresAt) || !created.Deadline.Equal(g2.Deadline) {
			t.Fatalf("merge into an absent checkout: %+v %v, want held %+v expiring %v", created, err, one(2, 2), g2.ExpiresAt)
		}
		if l := e.level(k2); l.Held != 3 {
			t.Fatalf("merge into an absent checkout: %+v, want 3 held", l)
		}

		// The destination claims the summed lines.
		cl, err := e.e.Claim(ctxb(), 1, customer)
		if err != nil || !slices.Equal(cl.Lines, want) {
			t.Fatalf("claim of the destination: %+v %v, want %+v", cl, err, want)
		}
		if l := e.level(k1); l.Available != 15 || l.Held != 0 {
			t.Fatalf("after the destination's claim: %+v, want 15 available, 0 held", l)
		}

		// Refusals change nothing.
		guest3 := e.reserveTTL(1, one(1, 1), 0, "")
		before := e.rows()
		mergeIntoErr(t, "merge into a claimed checkout", func() error { _, err := e.merge(1, guest3, customer); return err }(), customer, holdfast.ErrHoldClaimed)
		if _, err := e.merge(1, customer, guest3); !errors.Is(err, holdfast.ErrHoldClaimed) {
			t.Fatalf("merge of a claimed source: %v, want ErrHoldClaimed", err)
		}
		if _, err := e.merge(1, uuid.New(), guest3); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("merge of an unknown source: %v, want ErrNotFound", err)
		}
		if _, err := e.merge(2, guest3, fresh); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("merge of another shop's checkout: %v, want ErrNotFound", err)
		}
		for _, bad := range []uuid.UUID{guest3, uuid.Nil} {
			var ae *holdfast.ArgumentError
			if _, err := e.merge(1, guest3, bad); !errors.As(err, &ae) || ae.Field != "into" {
				t.Fatalf("merge into %s: %v, want an argument error on into", bad, err)
			}
		}
		e.sameAllRows(before)
		if g := e.hold(1, guest3); g.Status != holdfast.StatusHeld || !slices.Equal(g.Lines, one(1, 1)) {
			t.Fatalf("a refused merge changed its source: %+v", g)
		}
		e.assertSellable(k1, 20-5-1)
	})
}

// testMergeBuyerLimit: the destination's buyer limits apply to the summed
// quantities; over a limit the merge is a *BuyerLimitError and changes
// nothing; within it the merged units count against the buyer.
func testMergeBuyerLimit(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(1, 1)
	e.stock(k, 50)
	e.limit(1, 1, 3)
	customer := e.reserveTTL(1, one(1, 2), 0, "ann")
	guest := e.reserveTTL(1, one(1, 2), 0, "")
	before := e.rows()
	_, err := e.merge(1, guest, customer)
	var be *holdfast.BuyerLimitError
	if !errors.As(err, &be) || !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
		t.Fatalf("merge past the destination's buyer limit: %v, want a *BuyerLimitError", err)
	}
	e.sameAllRows(before)
	if g := e.hold(1, guest); g.Status != holdfast.StatusHeld || g.MergedInto != nil {
		t.Fatalf("a refused merge ended its source: %+v", g)
	}
	if c := e.hold(1, customer); !slices.Equal(c.Lines, one(1, 2)) || c.Revision != 1 {
		t.Fatalf("a refused merge changed its destination: %+v", c)
	}
	// Within the limit: merged; the buyer now has 3 and can take no more.
	guest2 := e.reserveTTL(1, one(1, 1), 0, "")
	if got, err := e.merge(1, guest2, customer); err != nil || !slices.Equal(got.Lines, one(1, 3)) {
		t.Fatalf("merge within the buyer limit: %+v %v", got, err)
	}
	if _, err := e.asBuyer(1, one(1, 1), "ann"); !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
		t.Fatalf("the buyer's next unit after a merge to the limit: %v, want ErrBuyerLimitExceeded", err)
	}
	// Same buyer on both sides: the source is not counted twice.
	a := e.reserveTTL(1, one(1, 1), 0, "bob")
	b := e.reserveTTL(1, one(1, 2), 0, "bob")
	if got, err := e.merge(1, a, b); err != nil || !slices.Equal(got.Lines, one(1, 3)) {
		t.Fatalf("merge of one buyer's two carts at the limit: %+v %v", got, err)
	}
	// An absent destination takes the source's buyer.
	c := e.reserveTTL(1, one(1, 1), 0, "cy")
	if _, err := e.merge(1, c, uuid.New()); err != nil {
		t.Fatalf("merge of a buyer's cart into an absent checkout: %v", err)
	}
	if _, err := e.asBuyer(1, one(1, 3), "cy"); !errors.Is(err, holdfast.ErrBuyerLimitExceeded) {
		t.Fatalf("the buyer's units after a merge into a new checkout: %v, want them still counted (ErrBuyerLimitExceeded)", err)
	}
}

// testMergeExpired: a source or destination past its expiry (swept or
// not) is not merged: ErrHoldExpired or a *MergeIntoError wrapping it, and
// nothing changes.
func testMergeExpired(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(1, 1)
	e.stock(k, 10)
	short := e.reserveTTL(1, one(1, 1), time.Minute, "")
	long := e.reserveTTL(1, one(1, 2), 30*time.Minute, "")
	e.Clock.Advance(2 * time.Minute)
	before := e.rows()
	if _, err := e.merge(1, short, long); !errors.Is(err, holdfast.ErrHoldExpired) {
		t.Fatalf("merge of a lapsed source: %v, want ErrHoldExpired", err)
	}
	mergeIntoErr(t, "merge into a lapsed checkout", func() error { _, err := e.merge(1, long, short); return err }(), short, holdfast.ErrHoldExpired)
	e.sameAllRows(before)
	if n := e.sweep(0); n != 1 {
		t.Fatalf("sweep: %d expired, want 1", n)
	}
	if _, err := e.merge(1, short, long); !errors.Is(err, holdfast.ErrHoldExpired) {
		t.Fatalf("merge of a swept source: %v, want ErrHoldExpired", err)
	}
	if _, err := e.merge(1, short, uuid.New()); !errors.Is(err, holdfast.ErrHoldExpired) {
		t.Fatalf("merge of a swept source into an absent checkout: %v, want ErrHoldExpired", err)
	}
	if l := e.level(k); l.Held != 2 {
		t.Fatalf("after the refused merges: %+v, want 2 held", l)
	}
}

// testMergeRaces: a merge against a concurrent claim of its source, and
// against its source's expiry and sweep: exactly one wins, each side
// answers what happened, and the units are where the answers say.
func testMergeRaces(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{Conns: 8})
		k1, k2 := key(1, 1), key(1, 2)
		e.stock(k1, 400)
		e.stock(k2, 400)
		rounds := 12
		if long() {
			rounds = 60
		}
		claimedUnits, merges := 0, 0
		for r := range rounds {
			guest := e.reserveTTL(1, one(1, 1), time.Minute, "")
			customer := e.reserveTTL(1, one(2, 1), time.Hour, "")
			var wg sync.WaitGroup
			var merged *holdfast.Hold
			var mergeErr, otherErr error
			expiry := r%2 == 1
			wg.Add(2)
			go func() { defer wg.Done(); merged, mergeErr = e.merge(1, guest, customer) }()
			go func() {
				defer wg.Done()
				if expiry {
					e.Clock.Advance(2 * time.Minute)
					_, otherErr = e.e.SweepOnce(ctxb())
				} else {
					_, otherErr = e.e.Claim(ctxb(), 1, guest)
				}
			}()
			wg.Wait()
			src, dst := e.hold(1, guest), e.hold(1, customer)
			switch {
			case mergeErr == nil:
				merges++
				if src.Status != holdfast.StatusReleased || src.MergedInto == nil || !slices.Equal(merged.Lines, append(one(1, 1), one(2, 1)...)) || !slices.Equal(dst.Lines, merged.Lines) {
					t.Fatalf("round %d: merge won, yet source %+v destination %+v answer %+v", r, src, dst, merged)
				}
				if !expiry && !errors.Is(otherErr, holdfast.ErrHoldReleased) {
					t.Fatalf("round %d: merge won, the claim answered %v, want ErrHoldReleased", r, otherErr)
				}
			case expiry && errors.Is(mergeErr, holdfast.ErrHoldExpired):
				if src.Status != holdfast.StatusExpired || !slices.Equal(dst.Lines, one(2, 1)) {
					t.Fatalf("round %d: expiry won, yet source %+v destination %+v", r, src, dst)
				}
			case !expiry && errors.Is(mergeErr, holdfast.ErrHoldClaimed):
				claimedUnits++
				if otherErr != nil || src.Status != holdfast.StatusClaimed || !slices.Equal(dst.Lines, one(2, 1)) {
					t.Fatalf("round %d: claim won (%v), yet source %+v destination %+v", r, otherErr, src, dst)
				}
			default:
				t.Fatalf("round %d (expiry %v): merge %v, other %v", r, expiry, mergeErr, otherErr)
			}
			if expiry && otherErr != nil {
				t.Fatalf("round %d: sweep: %v", r, otherErr)
			}
			if _, err := e.e.Release(ctxb(), 1, customer); err != nil {
				t.Fatalf("round %d: release the destination: %v", r, err)
			}
		}
		t.Logf("%d rounds: %d merges won, %d claims won", rounds, merges, claimedUnits)
		// A sweep that met a source locked by a merge skipped it (SKIP
		// LOCKED): a lapsed, unswept hold, still held until the next one.
		e.sweep(0)
		e.assertSellable(k1, 400-claimedUnits)
		e.assertSellable(k2, 400)
	})
}

// testMergeIntoWaiting: a destination that waits for stock has no hold to
// take lines: a *MergeIntoError wrapping ErrCheckoutWaiting, nothing
// changes, and the wait goes on.
func testMergeIntoWaiting(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(1, 1)
	e.stock(k, 2)
	guest := e.reserveTTL(1, one(1, 2), 0, "")
	waiting := uuid.New()
	e.mustWait(1, waiting, one(1, 1), time.Minute)
	before := e.rows()
	_, err := e.merge(1, guest, waiting)
	mergeIntoErr(t, "merge into a waiting checkout", err, waiting, holdfast.ErrCheckoutWaiting)
	e.sameAllRows(before)
	if g := e.hold(1, guest); g.Status != holdfast.StatusHeld {
		t.Fatalf("a refused merge ended its source: %+v", g)
	}
	if st := e.waitState(1, waiting); st != "waiting:1" {
		t.Fatalf("the destination's wait after a refused merge: %s, want waiting", st)
	}
}

// testMergeConcurrent: opposite merges (A into B, B into A) at once: one
// wins, the other answers a *MergeIntoError wrapping ErrHoldReleased, and
// they never deadlock for good; two guests merged at once into the same
// absent checkout both land in it (one creates it, the other adds to it).
func testMergeConcurrent(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: 8})
	k := key(1, 1)
	e.stock(k, 1000)
	for r := range 10 {
		a, b := e.reserveTTL(1, one(1, 1), 0, ""), e.reserveTTL(1, one(1, 2), 0, "")
		var wg sync.WaitGroup
		var errAB, errBA error
		wg.Add(2)
		go func() { defer wg.Done(); _, errAB = e.merge(1, a, b) }()
		go func() { defer wg.Done(); _, errBA = e.merge(1, b, a) }()
		wg.Wait()
		won, lost, loser := b, errBA, a
		if errAB != nil {
			won, lost, loser = a, errAB, b
		}
		if (errAB == nil) == (errBA == nil) {
			t.Fatalf("round %d: opposite merges answered %v and %v, want exactly one success", r, errAB, errBA)
		}
		mergeIntoErr(t, "the opposite merge that lost", lost, loser, holdfast.ErrHoldReleased)
		if got := e.hold(1, won); got.Status != holdfast.StatusHeld || !slices.Equal(got.Lines, one(1, 3)) {
			t.Fatalf("round %d: the winner's destination: %+v, want 3 held", r, got)
		}
		if _, err := e.e.Release(ctxb(), 1, won); err != nil {
			t.Fatal(err)
		}

		g1, g2, into := e.reserveTTL(1, one(1, 1), 0, ""), e.reserveTTL(1, one(1, 2), 0, ""), uuid.New()
		var err1, err2 error
		wg.Add(2)
		go func() { defer wg.Done(); _, err1 = e.merge(1, g1, into) }()
		go func() { defer wg.Done(); _, err2 = e.merge(1, g2, into) }()
		wg.Wait()
		if err1 != nil || err2 != nil {
			t.Fatalf("round %d: two merges into one absent checkout: %v, %v", r, err1, err2)
		}
		if got := e.hold(1, into); !slices.Equal(got.Lines, one(1, 3)) {
			t.Fatalf("round %d: the created destination: %+v, want 3 held", r, got)
		}
		if _, err := e.e.Release(ctxb(), 1, into); err != nil {
			t.Fatal(err)
		}
	}
	e.assertSellable(k, 1000)
}
