package enginetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// testBadArgumentsWriteNothing: every malformed call is an *ArgumentError
// naming the offending field, and writes nothing.
func testBadArgumentsWriteNothing(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	k := key(1, 1)
	e.stock(k, 10)
	held := e.mustReserve(1, one(1, 2), 0)

	type snapshot struct {
		level  holdfast.Level
		hold   holdfast.Hold
		keys   int
		rows   map[string]int
		ledger map[string]int
	}
	snap := func() snapshot {
		t.Helper()
		s := snapshot{level: *e.level(k), hold: *e.hold(1, held), keys: e.checkInvariant(false).Keys}
		if e.Rows != nil {
			rows, err := e.Rows(ctx)
			if err != nil {
				t.Fatalf("row counts: %v", err)
			}
			s.rows = rows
		}
		return s
	}
	before := snap()

	id := uuid.New()
	many := make([]holdfast.Line, holdfast.LinesPerCartMaxDefault+1)
	for i := range many {
		many[i] = holdfast.Line{ItemID: int64(i + 1), LocationID: 1, Quantity: 1}
	}
	long := strings.Repeat("x", holdfast.ReasonMaxLen+1)
	neg, tooMuch := -1, holdfast.AvailableMax+1
	set := func(n int) *int { return &n }
	cases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"reserve zero quantity", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 0)}), "lines[0].quantity"},
		{"reserve negative quantity", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, -3)}), "lines[0].quantity"},
		{"reserve huge quantity", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, holdfast.QuantityMaxDefault+1)}), "lines[0].quantity"},
		{"reserve empty cart", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id}), "lines"},
		{"reserve too many lines", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: many}), "lines"},
		{"reserve duplicate lines", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{
			{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 1}, {ItemID: 1, LocationID: 1, Quantity: 2}}}), "lines[2]"},
		{"reserve TTL too short", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 1), TTL: time.Millisecond}), "ttl"},
		{"reserve TTL too long", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 1), TTL: 2 * time.Hour}), "ttl"},
		{"reserve nil checkout", reserveCall(e, holdfast.ReserveParams{ShopID: 1, Lines: one(1, 1)}), "checkout_id"},
		{"reserve zero shop", reserveCall(e, holdfast.ReserveParams{ShopID: 0, CheckoutID: id, Lines: one(1, 1)}), "shop_id"},
		{"reserve negative item", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(-1, 1)}), "lines[0].item_id"},
		{"reserve zero location", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 0, Quantity: 1}}}), "lines[0].location_id"},
		{"reserve bad line after good", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 0}}}), "lines[1].quantity"},
		{"claim nil checkout", func() error { _, err := e.e.Claim(ctx, 1, uuid.Nil); return err }, "checkout_id"},
		{"claim zero shop", func() error { _, err := e.e.Claim(ctx, 0, held); return err }, "shop_id"},
		{"release negative shop", func() error { _, err := e.e.Release(ctx, -1, held); return err }, "shop_id"},
		{"release nil checkout", func() error { _, err := e.e.Release(ctx, 1, uuid.Nil); return err }, "checkout_id"},
		{"extend zero TTL", func() error { _, err := e.e.Extend(ctx, 1, held, 0); return err }, "ttl"},
		// A bad argument is answered before the checkout is looked up.
		{"extend zero TTL, unknown checkout", func() error { _, err := e.e.Extend(ctx, 1, id, 0); return err }, "ttl"},
		{"release negative shop, unknown checkout", func() error { _, err := e.e.Release(ctx, -1, id); return err }, "shop_id"},
		{"claim zero shop, unknown checkout", func() error { _, err := e.e.Claim(ctx, 0, id); return err }, "shop_id"},
		{"extend TTL above the lifetime", func() error { _, err := e.e.Extend(ctx, 1, held, 2*time.Hour); return err }, "ttl"},
		{"extend nil checkout", func() error { _, err := e.e.Extend(ctx, 1, uuid.Nil, time.Minute); return err }, "checkout_id"},
		{"read zero shop", func() error { _, err := e.e.Hold(ctx, 0, held); return err }, "shop_id"},
		{"adjust below zero", stockCall(e, holdfast.StockChange{Key: k, Delta: -11, Reason: "shrinkage"}), "delta"},
		{"adjust without reason", stockCall(e, holdfast.StockChange{Key: k, Delta: 1}), "reason"},
		{"adjust reason too long", stockCall(e, holdfast.StockChange{Key: k, Delta: 1, Reason: long}), "reason"},
		{"adjust reference too long", stockCall(e, holdfast.StockChange{Key: k, Delta: 1, Reason: "restock", Reference: long}), "reference"},
		{"set negative", stockCall(e, holdfast.StockChange{Key: k, Set: &neg, Reason: "stocktake"}), "available"},
		{"set above the maximum", stockCall(e, holdfast.StockChange{Key: k, Set: &tooMuch, Reason: "stocktake"}), "available"},
		{"set zero item", stockCall(e, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 0, LocationID: 1}, Set: set(1), Reason: "stocktake"}), "item_id"},
		{"set zero shop", stockCall(e, holdfast.StockChange{Key: holdfast.Key{ShopID: 0, ItemID: 1, LocationID: 1}, Set: set(1), Reason: "stocktake"}), "shop_id"},
		{"set zero location", stockCall(e, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 0}, Set: set(1), Reason: "stocktake"}), "location_id"},
		{"strategy unknown", func() error { _, err := e.e.SetStrategy(ctx, k, "fifo", 0); return err }, "strategy"},
		{"strategy negative pool cap", func() error { _, err := e.e.SetStrategy(ctx, k, h.Strategies[0], -1); return err }, "pool_cap"},
		{"strategy zero item", func() error {
			_, err := e.e.SetStrategy(ctx, holdfast.Key{ShopID: 1, LocationID: 1}, h.Strategies[0], 0)
			return err
		}, "item_id"},
		{"level zero item", func() error { _, err := e.e.Level(ctx, holdfast.Key{ShopID: 1, LocationID: 1}); return err }, "item_id"},
	}
	for _, tc := range cases {
		err := tc.call()
		var ae *holdfast.ArgumentError
		if !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("%s: got %v, want an *ArgumentError for %s", tc.name, err, tc.field)
		}
	}
	if _, err := e.e.Hold(ctx, 1, id); !errors.Is(err, holdfast.ErrNotFound) {
		t.Errorf("a rejected reservation left checkout %s behind: %v", id, err)
	}
	after := snap()
	if before.level != after.level {
		t.Errorf("rejected calls changed the level: %+v, then %+v", before.level, after.level)
	}
	if fmt.Sprint(before.hold) != fmt.Sprint(after.hold) {
		t.Errorf("rejected calls changed the hold: %+v, then %+v", before.hold, after.hold)
	}
	if before.keys != after.keys {
		t.Errorf("rejected calls created keys: %d before, %d after", before.keys, after.keys)
	}
	if !maps.Equal(before.rows, after.rows) {
		t.Errorf("rejected calls wrote rows: %v before, %v after", before.rows, after.rows)
	}
}

func reserveCall(e *env, p holdfast.ReserveParams) func() error {
	return func() error { _, err := e.e.Reserve(ctxb(), p); return err }
}

func stockCall(e *env, ch holdfast.StockChange) func() error {
	return func() error { _, err := e.e.ChangeStock(ctxb(), ch); return err }
}

// testStockChanges: set and adjust move available and nothing else; the
// buffer follows; stock below the holds shrinks what is sellable first.
func testStockChanges(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		ctx := ctxb()
		k := key(2, 5)
		// A new key: set creates it.
		if l := e.stock(k, 10); l.Available != 10 || l.Held != 0 || l.Sellable != 10 || l.Strategy != s || l.Key != k {
			t.Fatalf("set 10 on a new key: %+v", l)
		}
		id := e.mustReserve(2, []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 4}}, 0)
		// Restock.
		l, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 5, Reason: "restock", Reference: "po-1"})
		if err != nil || l.Available != 15 || l.Held != 4 || l.Sellable != 11 || l.OverCommitted {
			t.Fatalf("restock +5: %+v %v", l, err)
		}
		// Shrinkage down to exactly the holds: whole, nothing sellable.
		l, err = e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: -11, Reason: "shrinkage", Reference: "damaged"})
		if err != nil || l.Available != 4 || l.Held != 4 || l.Sellable != 0 || l.OverCommitted || l.Pooled != 0 {
			t.Fatalf("shrink -11: %+v %v", l, err)
		}
		if _, err := e.reserve(2, uuid.New(), []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 1}}); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("reserve at zero sellable: %v, want ErrInsufficientStock", err)
		}
		// A stocktake up again: sellable at once.
		six := 6
		l, err = e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &six, Reason: "stocktake", Reference: "count-1"})
		if err != nil || l.Available != 6 || l.Sellable != 2 {
			t.Fatalf("set 6: %+v %v", l, err)
		}
		e.assertSellable(k, 2)
		// The claim takes its units out of available.
		if _, err := e.e.Claim(ctx, 2, id); err != nil {
			t.Fatal(err)
		}
		if l := e.level(k); l.Available != 2 || l.Held != 0 || l.Sellable != 2 {
			t.Fatalf("after claim: %+v", l)
		}
		// The strategy can change under a stocked key; the units follow.
		for _, s2 := range h.Strategies {
			if l, err := e.e.SetStrategy(ctx, k, s2, 3); err != nil || l.Strategy != s2 || l.Available != 2 || l.Sellable != 2 {
				t.Fatalf("set strategy %s: %+v %v", s2, l, err)
			}
			e.assertSellable(k, 2)
		}
		// A key of another shop is another key.
		if l := e.level(key(3, 5)); l.Available != 0 || l.Sellable != 0 {
			t.Fatalf("another shop's key: %+v", l)
		}
	})
}

// testOverCommitted: a stock reduction below the active holds still
// applies — it is a fact about the warehouse — but the key is over-committed:
// nothing more is reserved on it, a claim beyond the stock is
// ErrOverCommitted and leaves the hold, and releasing makes it whole.
// testNotStocked: a key that never had stock set answers ErrNotStocked
// (also ErrInsufficientStock) with its line marked NotStocked; a sold-out
// key answers the plain shortfall, and a cart mixing both marks only the
// unstocked line.
func testNotStocked(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{})
		e.stock(key(2, 5), 0) // stocked, sold out
		_, err := e.reserve(2, uuid.New(), []holdfast.Line{{ItemID: 6, LocationID: 1, Quantity: 1}})
		var ise *holdfast.InsufficientStockError
		if !errors.Is(err, holdfast.ErrNotStocked) || !errors.Is(err, holdfast.ErrInsufficientStock) || !errors.As(err, &ise) ||
			len(ise.Lines) != 1 || !ise.Lines[0].NotStocked || !strings.Contains(err.Error(), "no stock has been set") {
			t.Fatalf("reserve of a key never stocked: %v, want ErrNotStocked with the line marked", err)
		}
		_, err = e.reserve(2, uuid.New(), []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 1}})
		if !errors.Is(err, holdfast.ErrInsufficientStock) || errors.Is(err, holdfast.ErrNotStocked) {
			t.Fatalf("reserve of a sold-out key: %v, want ErrInsufficientStock and not ErrNotStocked", err)
		}
		_, err = e.reserve(2, uuid.New(), []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 1}, {ItemID: 6, LocationID: 1, Quantity: 1}})
		ise = nil
		if !errors.As(err, &ise) || errors.Is(err, holdfast.ErrNotStocked) || len(ise.Lines) != 2 || ise.Lines[0].NotStocked || !ise.Lines[1].NotStocked {
			t.Fatalf("a cart of a sold-out and a never-stocked key: %v, want both short, only item 6 marked", err)
		}
		// A key only configured — a strategy or a safety stock, never any
		// stock — still answers not stocked; the strategy set is stored
		// and answered as set (not the default), on every engine.
		other := h.Strategies[(slices.Index(h.Strategies, s)+1)%len(h.Strategies)]
		lvl, err := e.e.SetStrategy(ctxb(), key(2, 7), other, 0)
		if err != nil || lvl.Strategy != other {
			t.Fatalf("SetStrategy %s on a key never stocked: %+v, %v; want it answered as set", other, lvl, err)
		}
		if lvl, err = e.e.Level(ctxb(), key(2, 7)); err != nil || lvl.Strategy != other {
			t.Fatalf("Level after SetStrategy %s on a key never stocked: %+v, %v; want it stored", other, lvl, err)
		}
		if _, err := e.e.SetSafetyStock(ctxb(), key(2, 8), 1); err != nil {
			t.Fatal(err)
		}
		for _, item := range []int64{7, 8} {
			if _, err := e.reserve(2, uuid.New(), []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: 1}}); !errors.Is(err, holdfast.ErrNotStocked) {
				t.Fatalf("reserve of a key only configured (item %d), never stocked: %v, want ErrNotStocked", item, err)
			}
		}
		// Stock set later: the key is stocked, and the strategy kept.
		if l := e.stock(key(2, 7), 1); l.Strategy != other {
			t.Fatalf("stock after SetStrategy %s: %+v; want the strategy kept", other, l)
		}
		e.mustReserve(2, one(7, 1), 0)

		// The other shop's stock does not count: the key is per shop.
		e.stock(key(3, 6), 5)
		if _, err := e.reserve(2, uuid.New(), []holdfast.Line{{ItemID: 6, LocationID: 1, Quantity: 1}}); !errors.Is(err, holdfast.ErrNotStocked) {
			t.Fatalf("reserve of a key stocked only in another shop: %v, want ErrNotStocked", err)
		}
	})
}

func testOverCommitted(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4}, Options{})
		e.allowOver = true
		ctx := ctxb()
		k := key(1, 8)
		e.stock(k, 10)
		big := e.mustReserve(1, one(8, 6), 0)
		small := e.mustReserve(1, one(8, 1), 0)
		// A reduction the holds fit in shrinks the buffer first: 10 -> 8
		// under 7 held leaves 1 sellable.
		l, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: -2, Reason: "shrinkage", Reference: "damaged"})
		if err != nil || l.Available != 8 || l.Held != 7 || l.Sellable != 1 || l.Pooled > 1 || l.OverCommitted {
			t.Fatalf("adjust -2 under 7 held: %+v %v", l, err)
		}
		// 8 -> 4 below 7 held: over-committed.
		l = e.stock(k, 4)
		if !l.OverCommitted || l.Pooled != 0 || l.Available != 4 || l.Held != 7 || l.Sellable != 0 {
			t.Fatalf("set 4 under 7 held: %+v", l)
		}
		rep := e.checkInvariant(true)
		if len(rep.OverCommitted) != 1 || rep.OverCommitted[0].Key != k {
			t.Fatalf("invariant report: %s, want %+v over-committed", rep, k)
		}
		if _, err := e.reserve(1, uuid.New(), one(8, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("reserve on an over-committed key: %v, want ErrInsufficientStock", err)
		}
		if _, err := e.e.Claim(ctx, 1, big); !errors.Is(err, holdfast.ErrOverCommitted) {
			t.Fatalf("claim beyond the stock: %v, want ErrOverCommitted", err)
		}
		if got := e.hold(1, big); got.Status != holdfast.StatusHeld {
			t.Fatalf("a refused claim changed the hold to %s", got.Status)
		}
		// A claim the stock can still cover goes through.
		if _, err := e.e.Claim(ctx, 1, small); err != nil {
			t.Fatalf("claim within the stock: %v", err)
		}
		if l := e.level(k); l.Available != 3 || l.Held != 6 || !l.OverCommitted {
			t.Fatalf("after the small claim: %+v", l)
		}
		if _, err := e.e.Release(ctx, 1, big); err != nil {
			t.Fatal(err)
		}
		// Whole again: the three units sell, exactly.
		if l := e.level(k); l.OverCommitted || l.Held != 0 || l.Sellable != 3 {
			t.Fatalf("after release: %+v", l)
		}
		e.assertSellable(k, 3)
		e.checkInvariant(false)
		// The ledger has every change: set 10, -2, set 4, the claim.
		p, err := e.e.Ledger(ctx, holdfast.LedgerQuery{Key: k, Limit: holdfast.ListLimitMax})
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, en := range p.Entries {
			sum += en.Delta
		}
		if len(p.Entries) != 4 || sum != 3 {
			t.Fatalf("ledger: %d entries summing to %d, want 4 summing to 3: %+v", len(p.Entries), sum, p.Entries)
		}
	})
}

// testIdempotentStockChanges: a stock change with an ID applies once, also
// under concurrent retries; a retry answers the first outcome;
// the same ID with another change is ErrIdempotencyConflict; the same ID in
// another shop is another change.
func testIdempotentStockChanges(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	k := key(1, 3)
	e.stock(k, 10)
	ch := holdfast.StockChange{Key: k, Delta: 5, Reason: "restock", Reference: "po-7", ID: "po-7-line-1"}
	// Concurrent retries: exactly one applies (answers not Replayed), every
	// other answers its level, Replayed.
	const retries = 8
	var bad errorSink
	var wg sync.WaitGroup
	var applied atomic.Int32
	for range retries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := e.e.ChangeStock(ctx, ch)
			switch {
			case err != nil:
				bad.add("concurrent retry: %v", err)
			case got.Available != 15:
				bad.add("concurrent retry answered %+v, want 15 available", got)
			case !got.Replayed:
				applied.Add(1)
			}
		}()
	}
	wg.Wait()
	bad.check(t)
	if n := applied.Load(); n != 1 {
		t.Fatalf("%d of %d concurrent retries answered as the one that applied the change (not Replayed), want 1", n, retries)
	}
	again, err := e.e.ChangeStock(ctx, ch)
	if err != nil || again.Available != 15 || !again.Replayed {
		t.Fatalf("retry: %+v %v, want 15 available, Replayed", again, err)
	}
	// Malformed ids are refused by every engine, changing nothing.
	for _, id := range []string{string(make([]byte, holdfast.StockChangeIDMaxLen+1)), "a\nb"} {
		bad := ch
		bad.ID = id
		if _, err := e.e.ChangeStock(ctx, bad); !errors.Is(err, holdfast.ErrInvalidArgument) {
			t.Fatalf("stock change id %q: %v, want an argument error", id, err)
		}
	}
	if l := e.level(k); l.Available != 15 {
		t.Fatalf("a retried change applied twice: %+v", l)
	}
	other := ch
	other.Delta = 6
	if _, err := e.e.ChangeStock(ctx, other); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
		t.Fatalf("same id, other change: %v, want ErrIdempotencyConflict", err)
	}
	if l := e.level(k); l.Available != 15 {
		t.Fatalf("a conflicting change applied: %+v", l)
	}
	// The same id in another shop, set form: another change.
	three := 3
	if got, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: key(2, 3), Set: &three, Reason: "count", ID: ch.ID}); err != nil || got.Available != 3 {
		t.Fatalf("the same id in another shop: %+v %v, want a fresh change", got, err)
	}
}

// testCheckoutIDsPerShop: a checkout id is scoped to its shop. The same id
// in two shops is two checkouts: each reserves, reads, extends, claims and
// releases on its own, under every strategy, and neither answers for the
// other; many shops reserving under the same ids at once (combined batches
// mix shops) each get their own hold.
func testCheckoutIDsPerShop(t *testing.T, h *Harness) {
	t.Parallel()
	t.Run("Sequential", func(t *testing.T) {
		h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) { checkoutIDsPerShop(t, h, s) })
	})
	t.Run("Concurrent", func(t *testing.T) { checkoutIDsPerShopConcurrent(t, h) })
}

func checkoutIDsPerShop(t *testing.T, h *Harness, s holdfast.Strategy) {
	e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 20}, Options{})
	ctx := ctxb()
	e.stock(key(1, 1), 5)
	e.stock(key(2, 1), 5)
	id := uuid.New()
	a, err := e.reserve(1, id, one(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.reserve(2, id, one(1, 3))
	if err != nil || b.Replayed || b.ShopID != 2 || b.Lines[0].Quantity != 3 {
		t.Fatalf("the same checkout id in another shop, other lines: %+v %v, want a fresh hold", b, err)
	}
	if got := e.hold(1, id); got.ShopID != 1 || got.Lines[0].Quantity != 2 || !got.ExpiresAt.Equal(a.ExpiresAt) {
		t.Fatalf("shop 1 reads %+v", got)
	}
	if got := e.hold(2, id); got.ShopID != 2 || got.Lines[0].Quantity != 3 {
		t.Fatalf("shop 2 reads %+v", got)
	}
	if _, err := e.e.Hold(ctx, 3, id); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("a third shop reads %v, want ErrNotFound", err)
	}
	if _, err := e.e.Claim(ctx, 3, id); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("a third shop claims: %v, want ErrNotFound", err)
	}
	if l := e.level(key(1, 1)); l.Held != 2 {
		t.Fatalf("shop 1: %+v", l)
	}
	if l := e.level(key(2, 1)); l.Held != 3 {
		t.Fatalf("shop 2: %+v", l)
	}
	// Extend in shop 2: shop 1's hold keeps its expiry.
	e.Clock.Advance(time.Minute)
	if got, err := e.e.Extend(ctx, 2, id, holdfast.HoldTTLDefault); err != nil || got.ShopID != 2 || !got.ExpiresAt.Equal(e.Clock.Now().Add(holdfast.HoldTTLDefault)) {
		t.Fatalf("extend in shop 2: %+v %v", got, err)
	}
	if got := e.hold(1, id); !got.ExpiresAt.Equal(a.ExpiresAt) {
		t.Fatalf("shop 2's extend moved shop 1's hold: %+v", got)
	}
	// Claim in shop 2, release in shop 1: each ends its own.
	if got, err := e.e.Claim(ctx, 2, id); err != nil || got.Status != holdfast.StatusClaimed || got.ShopID != 2 {
		t.Fatalf("claim in shop 2: %+v %v", got, err)
	}
	if got := e.hold(1, id); got.Status != holdfast.StatusHeld {
		t.Fatalf("shop 2's claim ended shop 1's hold: %+v", got)
	}
	if got, err := e.e.Release(ctx, 1, id); err != nil || got.Status != holdfast.StatusReleased || got.Replayed {
		t.Fatalf("release in shop 1: %+v %v", got, err)
	}
	if got := e.hold(2, id); got.Status != holdfast.StatusClaimed {
		t.Fatalf("shop 1's release touched shop 2's checkout: %+v", got)
	}
	if l := e.level(key(1, 1)); l.Available != 5 || l.Held != 0 {
		t.Fatalf("shop 1 at the end: %+v", l)
	}
	if l := e.level(key(2, 1)); l.Available != 2 || l.Held != 0 {
		t.Fatalf("shop 2 at the end: %+v", l)
	}
	// The sweep expires per shop too.
	id2 := uuid.New()
	for shop := int64(1); shop <= 2; shop++ {
		if _, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: id2, Lines: one(1, 1), TTL: time.Duration(shop) * time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.sweep(90 * time.Second); n != 1 {
		t.Fatalf("sweep expired %d holds, want shop 1's only", n)
	}
	if got := e.hold(1, id2); got.Status != holdfast.StatusExpired {
		t.Fatalf("shop 1 after the sweep: %+v", got)
	}
	if got := e.hold(2, id2); got.Status != holdfast.StatusHeld {
		t.Fatalf("shop 2 after the sweep: %+v", got)
	}
}

// checkoutIDsPerShopConcurrent: many shops reserve under the same checkout
// ids at once, under the combining strategies (whose batches mix shops) or
// else the first: each shop gets its own hold for each id.
func checkoutIDsPerShopConcurrent(t *testing.T, h *Harness) {
	t.Parallel()
	strategies := h.Combining
	if len(strategies) == 0 {
		strategies = h.Strategies[:1]
	}
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			const shops, ids = 8, 16
			e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{Conns: 24})
			for shop := int64(1); shop <= shops; shop++ {
				e.stock(key(shop, 1), ids)
			}
			idList := make([]uuid.UUID, ids)
			for i := range idList {
				idList[i] = uuid.New()
			}
			var bad errorSink
			var wg sync.WaitGroup
			for shop := int64(1); shop <= shops; shop++ {
				for _, id := range idList {
					wg.Add(1)
					go func() {
						defer wg.Done()
						got, err := e.reserve(shop, id, one(1, 1))
						switch {
						case err != nil:
							bad.add("reserve %s in shop %d: %v", id, shop, err)
						case got.ShopID != shop || got.CheckoutID != id || got.Replayed || got.Status != holdfast.StatusHeld:
							bad.add("reserve %s in shop %d answered %+v", id, shop, got)
						}
					}()
				}
			}
			wg.Wait()
			bad.check(t)
			for shop := int64(1); shop <= shops; shop++ {
				if l := e.level(key(shop, 1)); l.Held != ids || l.Sellable != 0 {
					t.Fatalf("shop %d: %+v, want %d held", shop, l, ids)
				}
				for _, id := range idList {
					if got := e.hold(shop, id); got.ShopID != shop || got.Status != holdfast.StatusHeld || got.Lines[0].Quantity != 1 {
						t.Fatalf("shop %d reads %+v", shop, got)
					}
				}
			}
		})
	}
}

// testConfiguredBounds: the bounds a deployment configures are the ones
// enforced, and the configured default TTL and lifetime are the ones used.
func testConfiguredBounds(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0], LinesPerCartMax: 3, QuantityMax: 5,
		HoldTTLDefault: 2 * time.Minute, HoldLifetimeMax: 10 * time.Minute}, Options{})
	ctx := ctxb()
	for item := int64(1); item <= 4; item++ {
		e.stock(key(1, item), 10)
	}
	four := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 1}, {ItemID: 3, LocationID: 1, Quantity: 1}, {ItemID: 4, LocationID: 1, Quantity: 1}}
	cases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"lines above the configured maximum", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: four}), "lines"},
		{"quantity above the configured maximum", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 6)}), "lines[0].quantity"},
		{"TTL above the configured lifetime", reserveCall(e, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1), TTL: 11 * time.Minute}), "ttl"},
	}
	for _, tc := range cases {
		var ae *holdfast.ArgumentError
		if err := tc.call(); !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("%s: %v, want an *ArgumentError for %s", tc.name, err, tc.field)
		}
	}
	id := e.mustReserve(1, four[:3], 0)
	got := e.hold(1, id)
	if !got.ExpiresAt.Equal(e.Clock.Now().Add(2*time.Minute)) || !got.Deadline.Equal(got.CreatedAt.Add(10*time.Minute)) {
		t.Fatalf("hold %+v (now %v), want the configured 2m TTL and 10m lifetime", got, e.Clock.Now())
	}
	e.mustReserve(1, one(4, 5), 0)
	if _, err := e.e.Extend(ctx, 1, id, 11*time.Minute); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Fatalf("extend above the configured lifetime: %v, want ErrInvalidArgument", err)
	}
	e.Clock.Advance(5 * time.Minute)
	if _, err := e.e.Extend(ctx, 1, id, 6*time.Minute); !errors.Is(err, holdfast.ErrLifetimeExceeded) {
		t.Fatalf("extend past the configured deadline: %v, want ErrLifetimeExceeded", err)
	}
	if ext, err := e.e.Extend(ctx, 1, id, 5*time.Minute); err != nil || !ext.ExpiresAt.Equal(got.Deadline) {
		t.Fatalf("extend to exactly the deadline: %+v %v", ext, err)
	}
}
