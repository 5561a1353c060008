package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// Issue #16: editing a held checkout (Engine.Edit) and partial claims
// (Engine.ClaimLines).

func line(item int64, q int) holdfast.Line {
	return holdfast.Line{ItemID: item, LocationID: 1, Quantity: q}
}

func (e *env) edit(shop int64, id uuid.UUID, rev int64, ttl time.Duration, lines ...holdfast.Line) (*holdfast.Hold, error) {
	return e.e.Edit(ctxb(), holdfast.EditParams{ShopID: shop, CheckoutID: id, Revision: rev, Lines: lines, TTL: ttl})
}

// held checks the held units of each key (item at location 1 of shop).
func (e *env) heldUnits(shop int64, want map[int64]int) {
	e.t.Helper()
	for item, n := range want {
		if l := e.level(key(shop, item)); l.Held != n {
			e.t.Fatalf("item %d: %+v, want %d held", item, l, n)
		}
	}
}

// sameHold reports whether two answers describe the same hold state.
func sameHold(a, b *holdfast.Hold) bool {
	return a.Status == b.Status && a.Revision == b.Revision && slices.Equal(a.Lines, b.Lines) &&
		slices.Equal(a.Released, b.Released) && a.ExpiresAt.Equal(b.ExpiresAt) && a.Deadline.Equal(b.Deadline)
}

// rowsOf counts the engine's rows of the given tables, or nil without Rows.
func (e *env) rowsOf(tables ...string) map[string]int {
	e.t.Helper()
	if e.Rows == nil {
		return nil
	}
	all, err := e.Rows(ctxb())
	if err != nil {
		e.t.Fatalf("rows: %v", err)
	}
	out := map[string]int{}
	for _, t := range tables {
		out[t] = all[t]
	}
	return out
}

func (e *env) sameRows(before map[string]int, tables ...string) {
	e.t.Helper()
	if before == nil {
		return
	}
	if after := e.rowsOf(tables...); !mapsEqual(before, after) {
		e.t.Fatalf("rows changed: before %v, after %v", before, after)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// testEditLifecycle grows, shrinks, adds and removes lines of a held
// checkout; replays and conflicts; keeps or moves the expiry; and a short
// line leaves the hold and the stock exactly as they were.
func testEditLifecycle(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 3, PoolCap: 6, LowWaterPercent: 100}, Options{})
		ctx := ctxb()
		for item := int64(1); item <= 3; item++ {
			e.stock(key(1, item), 10)
		}
		e.stock(key(1, 4), 2)
		id := uuid.New()
		first, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{line(2, 2), line(1, 3)}})
		if err != nil || first.Revision != 1 {
			t.Fatalf("reserve: %+v %v, want revision 1", first, err)
		}
		if got := e.hold(1, id); got.Revision != 1 {
			t.Fatalf("read back: revision %d, want 1", got.Revision)
		}

		// Grow one line, keep the other: only the difference is taken.
		grown, err := e.edit(1, id, 2, 0, line(2, 2), line(1, 5))
		if err != nil || grown.Status != holdfast.StatusHeld || grown.Revision != 2 || grown.Replayed ||
			!slices.Equal(grown.Lines, []holdfast.Line{line(1, 5), line(2, 2)}) || !grown.ExpiresAt.Equal(first.ExpiresAt) {
			t.Fatalf("grow: %+v %v (expiry before %v)", grown, err, first.ExpiresAt)
		}
		e.heldUnits(1, map[int64]int{1: 5, 2: 2, 3: 0})
		if got := e.hold(1, id); !sameHold(got, grown) {
			t.Fatalf("read back %+v, edit answered %+v", got, grown)
		}
		// A retry of the same edit: the same answer, nothing more taken.
		again, err := e.edit(1, id, 2, 0, line(1, 5), line(2, 2))
		if err != nil || !again.Replayed || !sameHold(again, grown) {
			t.Fatalf("retried edit: %+v %v", again, err)
		}
		// The same revision with other lines, and out-of-date revisions.
		if _, err := e.edit(1, id, 2, 0, line(1, 6), line(2, 2)); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("revision 2 again with other lines: %v, want ErrIdempotencyConflict", err)
		}
		for _, rev := range []int64{1, 4, 100} {
			_, err := e.edit(1, id, rev, 0, line(1, 1))
			var rc *holdfast.RevisionConflictError
			if !errors.As(err, &rc) || !errors.Is(err, holdfast.ErrRevisionConflict) || rc.Current != 2 || rc.Requested != rev {
				t.Fatalf("edit at revision %d of a hold at 2: %v, want a RevisionConflictError at 2", rev, err)
			}
		}
		e.heldUnits(1, map[int64]int{1: 5, 2: 2, 3: 0})

		// Shrink one line, drop one, add one.
		e.Clock.Advance(time.Minute)
		moved, err := e.edit(1, id, 3, 0, line(3, 4), line(1, 1))
		if err != nil || moved.Revision != 3 || !slices.Equal(moved.Lines, []holdfast.Line{line(1, 1), line(3, 4)}) {
			t.Fatalf("shrink, drop, add: %+v %v", moved, err)
		}
		e.heldUnits(1, map[int64]int{1: 1, 2: 0, 3: 4})
		e.assertSellable(key(1, 1), 9)
		e.assertSellable(key(1, 2), 10)
		e.assertSellable(key(1, 3), 6)
		// The original cart's reservation is no retry of this hold now.
		if _, err := e.reserve(1, id, []holdfast.Line{line(1, 3), line(2, 2)}); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("reserve of the original lines after an edit: %v, want ErrIdempotencyConflict", err)
		}

		// A TTL moves the expiry from now; beyond the deadline it is capped.
		ttl, err := e.edit(1, id, 4, 20*time.Minute, line(1, 1), line(3, 4))
		if err != nil || !ttl.ExpiresAt.Equal(e.Clock.Now().Add(20*time.Minute)) {
			t.Fatalf("edit with a TTL: %+v %v (now %v)", ttl, err, e.Clock.Now())
		}
		capped, err := e.edit(1, id, 5, holdfast.HoldLifetimeMaxDefault, line(1, 1), line(3, 4))
		if err != nil || !capped.ExpiresAt.Equal(capped.Deadline) {
			t.Fatalf("edit with a TTL past the deadline: %+v %v, want the expiry at the deadline", capped, err)
		}

		// A short line: the answer names it, and nothing changes.
		before := e.hold(1, id)
		levels := map[int64]*holdfast.Level{}
		for item := int64(1); item <= 4; item++ {
			levels[item] = e.level(key(1, item))
		}
		rows := e.rowsOf("holds", "reserved_quantities", "inventory_ledger")
		_, err = e.edit(1, id, 6, time.Hour, line(1, 2), line(3, 4), line(4, 3))
		var short *holdfast.InsufficientStockError
		if !errors.As(err, &short) || len(short.Lines) != 1 ||
			short.Lines[0] != (holdfast.Shortfall{ItemID: 4, LocationID: 1, Requested: 3, Sellable: 2}) {
			t.Fatalf("edit with a short new line: %v, want item 4 short (3 requested, 2 sellable)", err)
		}
		_, err = e.edit(1, id, 6, 0, line(1, 11), line(3, 4))
		if !errors.As(err, &short) || len(short.Lines) != 1 ||
			short.Lines[0] != (holdfast.Shortfall{ItemID: 1, LocationID: 1, Requested: 11, Sellable: 10}) {
			t.Fatalf("edit growing a line past the stock: %v, want item 1 short (11 requested, 10 obtainable)", err)
		}
		if got := e.hold(1, id); !sameHold(got, before) {
			t.Fatalf("after refused edits the hold is %+v, was %+v", got, before)
		}
		for item := int64(1); item <= 4; item++ {
			if l := e.level(key(1, item)); l.Held != levels[item].Held || l.Available != levels[item].Available {
				t.Fatalf("after refused edits item %d is %+v, was %+v", item, l, levels[item])
			}
		}
		e.sameRows(rows, "holds", "reserved_quantities", "inventory_ledger")
		// The refused revision is still the next one.
		if _, err := e.edit(1, id, 6, 0, line(1, 2), line(3, 4), line(4, 2)); err != nil {
			t.Fatalf("edit at revision 6 after refusals: %v", err)
		}
		e.heldUnits(1, map[int64]int{1: 2, 3: 4, 4: 2})

		// Claim the edited hold: the ledger drops by its edited lines.
		claimed, err := e.e.Claim(ctx, 1, id)
		if err != nil || claimed.Revision != 6 || len(claimed.Lines) != 3 {
			t.Fatalf("claim an edited hold: %+v %v", claimed, err)
		}
		for item, avail := range map[int64]int{1: 8, 2: 10, 3: 6, 4: 0} {
			if l := e.level(key(1, item)); l.Available != avail || l.Held != 0 {
				t.Fatalf("after the claim item %d: %+v, want %d available", item, l, avail)
			}
		}
	})
}

// testEditEndedHolds: edits of claimed, released, expired, lapsed and
// unknown holds, and edits with bad arguments, which write nothing.
func testEditEndedHolds(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{}, Options{})
	ctx := ctxb()
	e.stock(key(1, 1), 20)
	two := []holdfast.Line{line(1, 2)}

	claimed := e.mustReserve(1, two, 0)
	if _, err := e.e.Claim(ctx, 1, claimed); err != nil {
		t.Fatal(err)
	}
	if _, err := e.edit(1, claimed, 2, 0, line(1, 3)); !errors.Is(err, holdfast.ErrHoldClaimed) {
		t.Fatalf("edit a claimed hold: %v, want ErrHoldClaimed", err)
	}
	released := e.mustReserve(1, two, 0)
	if _, err := e.e.Release(ctx, 1, released); err != nil {
		t.Fatal(err)
	}
	if _, err := e.edit(1, released, 2, 0, line(1, 3)); !errors.Is(err, holdfast.ErrHoldReleased) {
		t.Fatalf("edit a released hold: %v, want ErrHoldReleased", err)
	}
	if _, err := e.edit(1, uuid.New(), 2, 0, line(1, 3)); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("edit an unknown checkout: %v, want ErrNotFound", err)
	}

	// Lapsed (past its expiry, not swept): still its own, editable; a TTL
	// revives it.
	lapsed := e.mustReserve(1, two, time.Minute)
	e.Clock.Advance(2 * time.Minute)
	kept, err := e.edit(1, lapsed, 2, 0, line(1, 3))
	if err != nil || kept.Status != holdfast.StatusExpired || !kept.Claimable || kept.Revision != 2 {
		t.Fatalf("edit a lapsed hold keeping its expiry: %+v %v, want expired and claimable", kept, err)
	}
	revived, err := e.edit(1, lapsed, 3, 10*time.Minute, line(1, 3))
	if err != nil || revived.Status != holdfast.StatusHeld || !revived.ExpiresAt.Equal(e.Clock.Now().Add(10*time.Minute)) {
		t.Fatalf("edit a lapsed hold with a TTL: %+v %v, want held again", revived, err)
	}
	// Swept: gone.
	expired := e.mustReserve(1, two, time.Minute)
	if n := e.sweep(2 * time.Minute); n != 1 {
		t.Fatalf("sweep expired %d holds, want 1", n)
	}
	if _, err := e.edit(1, expired, 2, 0, line(1, 3)); !errors.Is(err, holdfast.ErrHoldExpired) {
		t.Fatalf("edit an expired hold: %v, want ErrHoldExpired", err)
	}
	e.heldUnits(1, map[int64]int{1: 3})

	// Bad arguments: an *ArgumentError naming the field, nothing written.
	e.stock(key(1, 2), 5)
	id := e.mustReserve(1, two, 0)
	before := e.hold(1, id)
	rows := e.rowsOf("holds", "reserved_quantities", "inventory_ledger", "inventory_levels")
	cases := []struct {
		field string
		p     holdfast.EditParams
	}{
		{"shop_id", holdfast.EditParams{ShopID: 0, CheckoutID: id, Revision: 2, Lines: two}},
		{"checkout_id", holdfast.EditParams{ShopID: 1, Revision: 2, Lines: two}},
		{"revision", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 0, Lines: two}},
		{"revision", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: -3, Lines: two}},
		{"ttl", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: two, TTL: -time.Second}},
		{"ttl", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: two, TTL: 500 * time.Millisecond}},
		{"ttl", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: two, TTL: holdfast.HoldLifetimeMaxDefault + time.Second}},
		{"lines", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2}},
		{"lines[1].quantity", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: []holdfast.Line{line(1, 1), line(2, 0)}}},
		{"lines[0].quantity", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: []holdfast.Line{line(1, holdfast.QuantityMaxDefault+1)}}},
		{"lines[0].item_id", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: []holdfast.Line{line(0, 1)}}},
		{"lines[1]", holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: []holdfast.Line{line(1, 1), line(1, 2)}}},
	}
	for _, c := range cases {
		_, err := e.e.Edit(ctx, c.p)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != c.field {
			t.Fatalf("edit %+v: %v, want an ArgumentError on %s", c.p, err, c.field)
		}
	}
	if got := e.hold(1, id); !sameHold(got, before) {
		t.Fatalf("after rejected edits the hold is %+v, was %+v", got, before)
	}
	e.sameRows(rows, "holds", "reserved_quantities", "inventory_ledger", "inventory_levels")
}

// testPartialClaim claims part of a hold and releases the rest in one step;
// the ledger drops by exactly the claimed units.
func testPartialClaim(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 3, PoolCap: 6, LowWaterPercent: 100}, Options{})
		ctx := ctxb()
		e.stock(key(1, 1), 10)
		e.stock(key(1, 2), 10)
		id := e.mustReserve(1, []holdfast.Line{line(1, 4), line(2, 3)}, 0)

		// Bad partial claims change nothing.
		rows := e.rowsOf("holds", "reserved_quantities", "inventory_ledger")
		for _, c := range []struct {
			field string
			lines []holdfast.Line
		}{
			{"lines[1]", []holdfast.Line{line(1, 1), line(3, 1)}},
			{"lines[0].quantity", []holdfast.Line{line(1, 5)}},
			{"lines[0].quantity", []holdfast.Line{line(1, 0)}},
			{"lines", nil},
			{"lines[1]", []holdfast.Line{line(2, 1), line(2, 1)}},
		} {
			_, err := e.e.ClaimLines(ctx, 1, id, c.lines)
			var ae *holdfast.ArgumentError
			if !errors.As(err, &ae) || ae.Field != c.field {
				t.Fatalf("claim %+v: %v, want an ArgumentError on %s", c.lines, err, c.field)
			}
		}
		if got := e.hold(1, id); got.Status != holdfast.StatusHeld || len(got.Lines) != 2 {
			t.Fatalf("after rejected partial claims: %+v", got)
		}
		e.heldUnits(1, map[int64]int{1: 4, 2: 3})
		e.sameRows(rows, "holds", "reserved_quantities", "inventory_ledger")

		// Claim one unit of item 1; the other three and all of item 2 go back.
		got, err := e.e.ClaimLines(ctx, 1, id, []holdfast.Line{line(1, 1)})
		if err != nil || got.Status != holdfast.StatusClaimed || got.Replayed || got.EndedAt == nil ||
			!slices.Equal(got.Lines, []holdfast.Line{line(1, 1)}) ||
			!slices.Equal(got.Released, []holdfast.Line{line(1, 3), line(2, 3)}) {
			t.Fatalf("partial claim: %+v %v", got, err)
		}
		for item, avail := range map[int64]int{1: 9, 2: 10} {
			if l := e.level(key(1, item)); l.Available != avail || l.Held != 0 {
				t.Fatalf("after the partial claim item %d: %+v, want %d available, none held", item, l, avail)
			}
		}
		if rows != nil {
			// One ledger entry: the claimed line; the released units never
			// touch the ledger.
			if after := e.rowsOf("inventory_ledger"); after["inventory_ledger"] != rows["inventory_ledger"]+1 {
				t.Fatalf("ledger rows %d -> %d, want one more", rows["inventory_ledger"], after["inventory_ledger"])
			}
		}
		e.assertSellable(key(1, 1), 9)
		e.assertSellable(key(1, 2), 10)
		if read := e.hold(1, id); !sameHold(read, got) {
			t.Fatalf("read back %+v, claim answered %+v", read, got)
		}
		// Retries answer the same; contradicting steps their errors.
		again, err := e.e.ClaimLines(ctx, 1, id, []holdfast.Line{line(1, 1)})
		if err != nil || !again.Replayed || !sameHold(again, got) {
			t.Fatalf("retried partial claim: %+v %v", again, err)
		}
		if _, err := e.e.ClaimLines(ctx, 1, id, []holdfast.Line{line(1, 2)}); !errors.Is(err, holdfast.ErrHoldClaimed) {
			t.Fatalf("another partial claim of a claimed hold: %v, want ErrHoldClaimed", err)
		}
		if full, err := e.e.Claim(ctx, 1, id); err != nil || !full.Replayed {
			t.Fatalf("claim after the partial claim: %+v %v, want a replay", full, err)
		}
		if _, err := e.e.Release(ctx, 1, id); !errors.Is(err, holdfast.ErrHoldClaimed) {
			t.Fatalf("release after the partial claim: %v, want ErrHoldClaimed", err)
		}
		if _, err := e.edit(1, id, 2, 0, line(1, 1)); !errors.Is(err, holdfast.ErrHoldClaimed) {
			t.Fatalf("edit after the partial claim: %v, want ErrHoldClaimed", err)
		}
		if l := e.level(key(1, 1)); l.Available != 9 {
			t.Fatalf("retries moved the ledger: %+v", l)
		}

		// Every line whole: nothing released.
		whole := e.mustReserve(1, []holdfast.Line{line(1, 2), line(2, 1)}, 0)
		all, err := e.e.ClaimLines(ctx, 1, whole, []holdfast.Line{line(2, 1), line(1, 2)})
		if err != nil || len(all.Lines) != 2 || len(all.Released) != 0 {
			t.Fatalf("partial claim of every line: %+v %v", all, err)
		}
		// Released, expired, lapsed, unknown.
		rel := e.mustReserve(1, one(1, 1), 0)
		if _, err := e.e.Release(ctx, 1, rel); err != nil {
			t.Fatal(err)
		}
		if _, err := e.e.ClaimLines(ctx, 1, rel, one(1, 1)); !errors.Is(err, holdfast.ErrHoldReleased) {
			t.Fatalf("partial claim of a released hold: %v, want ErrHoldReleased", err)
		}
		if _, err := e.e.ClaimLines(ctx, 1, uuid.New(), one(1, 1)); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("partial claim of an unknown checkout: %v, want ErrNotFound", err)
		}
		lapsed := e.mustReserve(1, one(1, 2), time.Minute)
		e.Clock.Advance(2 * time.Minute)
		if got, err := e.e.ClaimLines(ctx, 1, lapsed, one(1, 1)); err != nil || got.Status != holdfast.StatusClaimed {
			t.Fatalf("partial claim of a lapsed hold: %+v %v", got, err)
		}
		swept := e.mustReserve(1, one(1, 2), time.Minute)
		if n := e.sweep(2 * time.Minute); n != 1 {
			t.Fatalf("swept %d, want 1", n)
		}
		if _, err := e.e.ClaimLines(ctx, 1, swept, one(1, 1)); !errors.Is(err, holdfast.ErrHoldExpired) {
			t.Fatalf("partial claim of a swept hold: %v, want ErrHoldExpired", err)
		}
		// 10 - 1 (partial) - 2 (whole) - 1 (lapsed) on item 1.
		if l := e.level(key(1, 1)); l.Available != 6 || l.Held != 0 {
			t.Fatalf("item 1 at the end: %+v, want 6 available", l)
		}
	})
}

// testEditRacesReserves races a checkout's edits (two editors, each
// reading the hold and editing its next revision, growing and shrinking
// one line between base and base+1 units) against buyers reserving the
// key's last units, with invariant checks throughout. The units the
// checkout keeps are never lost to a buyer: every edit that shrinks
// answers at least base units, a grow that finds no unit leaves the hold
// as it was, and at the end held = the checkout's units + the buyers'.
func testEditRacesReserves(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 3, PoolCap: 8, LowWaterPercent: 100}, Options{Conns: 20})
		ctx := ctxb()
		const stock, base = 12, 5
		k := key(2, 7)
		e.stock(k, stock)
		e.stock(key(2, 8), 4)
		id := e.mustReserve(2, []holdfast.Line{line(7, base)}, 0)
		rounds, buyers := 40, 6
		if long() {
			rounds, buyers = 200, 10
		}
		var bad errorSink
		var edits, replays, conflicts, editShort, reserved, reserveShort, checks atomic.Int64
		var buyerIDs sync.Map
		done := make(chan struct{})
		var wg, checker sync.WaitGroup
		checker.Add(1)
		go func() {
			defer checker.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				rep, err := e.e.CheckInvariant(ctx)
				if err != nil {
					bad.add("invariant check: %v", err)
					return
				}
				if !rep.OK() || len(rep.OverCommitted) > 0 {
					bad.add("invariant broken mid-race: %s", rep)
					return
				}
				checks.Add(1)
			}
		}()
		for ed := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					cur, err := e.e.Hold(ctx, 2, id)
					if err != nil {
						bad.add("read: %v", err)
						return
					}
					if cur.Lines[0].ItemID != 7 || cur.Lines[0].Quantity < base {
						bad.add("the checkout lost its kept units: %+v", cur)
						return
					}
					want := []holdfast.Line{line(7, base+(r+ed)%2)}
					if (r+ed)%5 == 0 {
						// Add and remove a second line too.
						want = append(want, line(8, 1))
					}
					got, err := e.e.Edit(ctx, holdfast.EditParams{ShopID: 2, CheckoutID: id, Revision: cur.Revision + 1, Lines: want})
					var short *holdfast.InsufficientStockError
					switch {
					case errors.Is(err, holdfast.ErrRevisionConflict), errors.Is(err, holdfast.ErrIdempotencyConflict):
						conflicts.Add(1)
					case errors.As(err, &short):
						editShort.Add(1)
					case err != nil:
						bad.add("edit: %v", err)
					case got.Revision != cur.Revision+1 || !slices.Equal(got.Lines, want):
						bad.add("edit to %+v at revision %d answered %+v", want, cur.Revision+1, got)
					case got.Replayed:
						// The other editor made this very edit first.
						replays.Add(1)
					default:
						edits.Add(1)
					}
				}
			}()
		}
		for range buyers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds / 2 {
					bid := uuid.New()
					_, err := e.reserve(2, bid, one(7, 1))
					switch {
					case errors.Is(err, holdfast.ErrInsufficientStock):
						reserveShort.Add(1)
						continue
					case err != nil:
						bad.add("reserve: %v", err)
						continue
					}
					reserved.Add(1)
					// Half the buyers give their unit back: units come and go.
					if reserved.Load()%2 == 0 {
						if _, err := e.e.Release(ctx, 2, bid); err != nil {
							bad.add("release: %v", err)
						}
						continue
					}
					buyerIDs.Store(bid, true)
				}
			}()
		}
		wg.Wait()
		close(done)
		checker.Wait()
		bad.check(t)
		final := e.hold(2, id)
		if final.Revision != 1+edits.Load() {
			t.Fatalf("revision %d after %d successful edits", final.Revision, edits.Load())
		}
		mine := final.Lines[0].Quantity
		others := 0
		buyerIDs.Range(func(_, _ any) bool { others++; return true })
		if l := e.level(k); l.Held != mine+others || l.Held > stock {
			t.Fatalf("level %+v, want %d held (checkout %d + %d buyers)", l, mine+others, mine, others)
		}
		t.Logf("strategy %s: %d edits, %d replays, %d revision conflicts, %d edits short, %d reserves held, %d reserves short, %d invariant checks mid-race",
			s, edits.Load(), replays.Load(), conflicts.Load(), editShort.Load(), reserved.Load(), reserveShort.Load(), checks.Load())
		if edits.Load() == 0 || reserved.Load() == 0 {
			t.Fatalf("no race: %d edits, %d reserves", edits.Load(), reserved.Load())
		}
		if _, err := e.e.Release(ctx, 2, id); err != nil {
			t.Fatal(err)
		}
		buyerIDs.Range(func(k, _ any) bool {
			if _, err := e.e.Release(ctx, 2, k.(uuid.UUID)); err != nil {
				t.Fatal(err)
			}
			return true
		})
		e.assertSellable(k, stock)
	})
}

// testEditRacesLifecycle races an edit of a checkout against its claim,
// its partial claim, its release and its expiry (sweep), round after round: each pair ends in
// one of the outcomes a serial order allows, and each answer says which.
func testEditRacesLifecycle(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{}, Options{Conns: 12})
	ctx := ctxb()
	k := key(3, 1)
	rounds := 15
	if long() {
		rounds = 60
	}
	e.stock(k, 4*rounds*3)
	counts := map[string]int{}
	for r := range rounds {
		for _, op := range []string{"claim", "release", "expiry", "partial"} {
			ttl := time.Duration(0)
			if op == "expiry" {
				ttl = time.Minute
			}
			id := e.mustReserve(3, one(1, 2), ttl)
			if op == "expiry" {
				e.Clock.Advance(2 * time.Minute)
			}
			before := e.level(k)
			var editH, otherH *holdfast.Hold
			var editErr, otherErr error
			var swept int
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				editH, editErr = e.e.Edit(ctx, holdfast.EditParams{ShopID: 3, CheckoutID: id, Revision: 2, Lines: one(1, 3), TTL: 10 * time.Minute})
			}()
			go func() {
				defer wg.Done()
				<-start
				switch op {
				case "claim":
					otherH, otherErr = e.e.Claim(ctx, 3, id)
				case "release":
					otherH, otherErr = e.e.Release(ctx, 3, id)
				case "partial":
					otherH, otherErr = e.e.ClaimLines(ctx, 3, id, one(1, 1))
				default:
					swept, otherErr = e.e.SweepOnce(ctx)
				}
			}()
			close(start)
			wg.Wait()
			if otherErr != nil {
				t.Fatalf("round %d: %s: %v", r, op, otherErr)
			}
			final := e.hold(3, id)
			after := e.level(k)
			editFirst := editErr == nil
			var outcome string
			switch op {
			case "claim":
				q := otherH.Lines[0].Quantity
				switch {
				case editFirst && editH.Revision == 2 && q == 3 && otherH.Revision == 2:
					outcome = "edit then claim"
				case errors.Is(editErr, holdfast.ErrHoldClaimed) && q == 2 && otherH.Revision == 1:
					outcome = "claim then edit"
				}
				if after.Available != before.Available-q || after.Held != before.Held-2 {
					t.Fatalf("round %d: claim of %d: level %+v -> %+v", r, q, before, after)
				}
			case "release":
				q := otherH.Lines[0].Quantity
				switch {
				case editFirst && q == 3 && otherH.Status == holdfast.StatusReleased:
					outcome = "edit then release"
				case errors.Is(editErr, holdfast.ErrHoldReleased) && q == 2:
					outcome = "release then edit"
				}
				if after.Held != before.Held-2 || after.Available != before.Available {
					t.Fatalf("round %d: release: level %+v -> %+v", r, before, after)
				}
			case "partial":
				var rel int
				if len(otherH.Released) == 1 {
					rel = otherH.Released[0].Quantity
				}
				switch {
				case editFirst && otherH.Revision == 2 && rel == 2:
					outcome = "edit then partial claim"
				case errors.Is(editErr, holdfast.ErrHoldClaimed) && otherH.Revision == 1 && rel == 1:
					outcome = "partial claim then edit"
				}
				if otherH.Lines[0].Quantity != 1 || after.Available != before.Available-1 || after.Held != before.Held-2 {
					t.Fatalf("round %d: partial claim: %+v, level %+v -> %+v", r, otherH, before, after)
				}
			default:
				switch {
				case editFirst && swept == 0 && final.Status == holdfast.StatusHeld && final.Revision == 2:
					outcome = "edit revives, sweep skips"
					if after.Held != before.Held+1 {
						t.Fatalf("round %d: revived: level %+v -> %+v", r, before, after)
					}
					if _, err := e.e.Release(ctx, 3, id); err != nil {
						t.Fatal(err)
					}
				case errors.Is(editErr, holdfast.ErrHoldExpired) && swept == 1 && final.Status == holdfast.StatusExpired:
					outcome = "sweep then edit"
					if after.Held != before.Held-2 {
						t.Fatalf("round %d: swept: level %+v -> %+v", r, before, after)
					}
				}
			}
			if outcome == "" {
				t.Fatalf("round %d: %s raced an edit: edit %+v %v; %s %+v (swept %d) %v; hold now %+v",
					r, op, editH, editErr, op, otherH, swept, otherErr, final)
			}
			counts[outcome]++
			e.checkInvariant(false)
		}
	}
	t.Logf("edit races over %d rounds: %s", rounds, fmt.Sprint(counts))
}

// editHistory is one edit of the history test (testHistory): a checkout's
// one line gets a new quantity, at its next revision or (sometimes) a
// stale, repeated or future one, keeping or moving the expiry. Exclusive
// of the checkout's reserves and extends, as extends are. It returns the
// answer's result ("" when it did not run).
func editHistory(e *env, hist *history.History, w int, r *rand.Rand, pick func(*rand.Rand) (*histCheckout, bool), keys []holdfast.Key, ttls []time.Duration) string {
	co, ok := pick(r)
	if !ok || !co.busy.TryLock() {
		return ""
	}
	q := 1 + r.IntN(3)
	var ttl time.Duration
	if r.IntN(2) == 0 {
		ttl = ttls[r.IntN(len(ttls))]
	}
	rev := co.edits + 2
	if r.IntN(5) == 0 {
		rev = co.edits + 1 + int64(r.IntN(3)) // a retry, the next one, or one ahead
	}
	now := e.Clock.Now()
	call := hist.Now()
	got, err := e.e.Edit(ctxb(), holdfast.EditParams{ShopID: 1, CheckoutID: co.id, Revision: rev, TTL: ttl,
		Lines: []holdfast.Line{{ItemID: keys[co.key].ItemID, LocationID: keys[co.key].LocationID, Quantity: q}}})
	if err == nil && !got.Replayed {
		co.edits, co.qty = rev-1, q
	}
	co.busy.Unlock()
	out := history.Output{Result: history.Classify(err)}
	if err == nil {
		out.Exp, out.Replayed = got.ExpiresAt.UnixMicro(), got.Replayed
	}
	hist.Add(w, history.Input{Op: history.OpEdit, Key: co.key, CO: co.num, Qty: q, Rev: rev, Now: now.UnixMicro(), TTL: ttl.Microseconds()}, call, out)
	if out.Replayed {
		return "replayed"
	}
	return out.Result
}
