package enginetest

import (
	"errors"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
)

// Issue #24 item 6: small truth gaps, each with the answer a caller
// expects.

// testStockChangeClaimReason: a stock change is a stock.changed event
// whatever its reason and reference — also reason "claim" (or
// "claim-after-expiry") naming a claimed checkout, which only the claim's
// own deduction (a hold.claimed event) may look like.
func testStockChangeClaimReason(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{})
		ctx := ctxb()
		k := key(1, 1)
		e.stock(k, 10)
		id := e.mustReserve(1, one(1, 2), 0)
		if _, err := e.e.Claim(ctx, 1, id); err != nil {
			t.Fatal(err)
		}
		evs := e.events(1, 0)
		cursor := evs[len(evs)-1].Cursor
		for _, reason := range []string{"claim", "claim-after-expiry"} {
			if _, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: -1, Reason: reason, Reference: id.String()}); err != nil {
				t.Fatalf("stock change with reason %q: %v", reason, err)
			}
			got := e.events(1, cursor)
			var stock []holdfast.Event
			for _, ev := range got {
				if ev.Type == holdfast.EventStockChanged {
					stock = append(stock, ev)
				}
			}
			if len(stock) != 1 || stock[0].Reason != reason || stock[0].Reference != id.String() || stock[0].Delta == nil || *stock[0].Delta != -1 {
				t.Fatalf("stock change with reason %q and the claimed checkout as reference: events %+v, want one stock.changed with delta -1", reason, got)
			}
			cursor = got[len(got)-1].Cursor
		}
	})
}

// testEditCurrentRevisionContent: an edit naming the hold's current
// revision is a retry of the edit that made it only when it carries the
// same lines and the same TTL; any other content (a new TTL included) is
// ErrIdempotencyConflict and changes nothing — never "replayed" with the
// old expiry kept.
func testEditCurrentRevisionContent(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	e.stock(key(1, 1), 10)
	id := e.mustReserve(1, one(1, 2), 10*time.Minute)
	conflict := func(step string, rev int64, ttl time.Duration, q int) {
		t.Helper()
		before := e.hold(1, id)
		got, err := e.edit(1, id, rev, ttl, line(1, q))
		if !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("%s: %+v %v, want ErrIdempotencyConflict", step, got, err)
		}
		if after := e.hold(1, id); !sameHold(after, before) {
			t.Fatalf("%s: the hold is %+v, was %+v", step, after, before)
		}
	}
	// Revision 1 is the reservation: an edit naming it with the same
	// lines and no TTL is answered as it is; with a TTL it is no retry.
	if got, err := e.edit(1, id, 1, 0, line(1, 2)); err != nil || !got.Replayed || got.Revision != 1 {
		t.Fatalf("edit at revision 1 with the reserved lines: %+v %v, want it replayed", got, err)
	}
	conflict("revision 1 with a TTL", 1, 20*time.Minute, 2)

	e.Clock.Advance(time.Minute)
	two, err := e.edit(1, id, 2, 0, line(1, 3))
	if err != nil || two.Revision != 2 {
		t.Fatalf("edit to revision 2: %+v %v", two, err)
	}
	conflict("revision 2 again with a new TTL", 2, 20*time.Minute, 3)
	conflict("revision 2 again with other lines", 2, 0, 4)
	if got, err := e.edit(1, id, 2, 0, line(1, 3)); err != nil || !got.Replayed || !sameHold(got, two) {
		t.Fatalf("retry of revision 2: %+v %v", got, err)
	}

	three, err := e.edit(1, id, 3, 20*time.Minute, line(1, 3))
	if err != nil || three.Revision != 3 || !three.ExpiresAt.Equal(e.Clock.Now().Add(20*time.Minute)) {
		t.Fatalf("edit to revision 3 with a TTL: %+v %v (now %v)", three, err, e.Clock.Now())
	}
	e.Clock.Advance(time.Minute)
	// The retry of the same edit moves nothing: the expiry is the first
	// attempt's, not a minute later.
	if got, err := e.edit(1, id, 3, 20*time.Minute, line(1, 3)); err != nil || !got.Replayed || !sameHold(got, three) {
		t.Fatalf("retry of revision 3: %+v %v, want %+v replayed", got, err, three)
	}
	conflict("revision 3 again without its TTL", 3, 0, 3)
	conflict("revision 3 again with another TTL", 3, 30*time.Minute, 3)
	e.heldUnits(1, map[int64]int{1: 3})
}

// testListingCursorScope: a listing's cursor belongs to the listing that
// issued it — its shop and filters, a ledger cursor to its key. Used on
// another, it is an ErrInvalidCursor (a *CursorError, also an
// *ArgumentError for field cursor), never a silent position in the other
// listing.
func testListingCursorScope(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	for shop := int64(1); shop <= 2; shop++ {
		e.stock(key(shop, 1), 100)
		e.stock(key(shop, 2), 100)
		for range 6 {
			e.Clock.Advance(time.Second)
			e.mustReserve(shop, one(1, 1), 0)
		}
	}
	first, err := e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1, Limit: 3})
	if err != nil || first.Next == "" {
		t.Fatalf("first page of shop 1: %+v %v", first, err)
	}
	// The cursor works where it was issued.
	if p, err := e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1, Limit: 3, After: first.Next}); err != nil || len(p.Holds) != 3 {
		t.Fatalf("second page of shop 1: %+v %v", p, err)
	}
	filtered, err := e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1, ItemID: 1, Status: holdfast.StatusHeld, Limit: 2})
	if err != nil || filtered.Next == "" {
		t.Fatalf("first filtered page: %+v %v", filtered, err)
	}
	if _, err := e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1, ItemID: 1, Status: holdfast.StatusHeld, After: filtered.Next}); err != nil {
		t.Fatalf("second filtered page: %v", err)
	}
	e.stock(key(1, 1), 99)
	ledger, err := e.e.Ledger(ctx, holdfast.LedgerQuery{Key: key(1, 1), Limit: 1})
	if err != nil || ledger.Next == "" {
		t.Fatalf("first ledger page: %+v %v", ledger, err)
	}
	foreign := []struct {
		name string
		call func() (any, error)
	}{
		{"shop 1's cursor on shop 2", func() (any, error) {
			return e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 2, Limit: 3, After: first.Next})
		}},
		{"an unfiltered cursor with a status filter", func() (any, error) {
			return e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1, Status: holdfast.StatusHeld, After: first.Next})
		}},
		{"an unfiltered cursor with an item filter", func() (any, error) {
			return e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1, ItemID: 1, After: first.Next})
		}},
		{"a filtered cursor without its filters", func() (any, error) {
			return e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1, After: filtered.Next})
		}},
		{"a filtered cursor with another location", func() (any, error) {
			return e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1, ItemID: 1, LocationID: 2, Status: holdfast.StatusHeld, After: filtered.Next})
		}},
		{"a ledger cursor on another item", func() (any, error) {
			return e.e.Ledger(ctx, holdfast.LedgerQuery{Key: key(1, 2), After: ledger.Next})
		}},
		{"a ledger cursor on another shop's key", func() (any, error) {
			return e.e.Ledger(ctx, holdfast.LedgerQuery{Key: key(2, 1), After: ledger.Next})
		}},
	}
	for _, tc := range foreign {
		got, err := tc.call()
		var ce *holdfast.CursorError
		var ae *holdfast.ArgumentError
		if !errors.Is(err, holdfast.ErrInvalidCursor) || !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ce) ||
			!errors.As(err, &ae) || ae.Field != "cursor" {
			t.Errorf("%s: %+v %v, want an ErrInvalidCursor", tc.name, got, err)
		}
	}
}
