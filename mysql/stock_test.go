package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
)

// TestLateClaims: an expired hold not yet swept is claimable as it is; once
// swept, a claim takes the same lines afresh when it can, and answers an
// *ExpiredError naming the short lines when it cannot.
func TestLateClaims(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 4, holdfast.Config{})
			ctx := context.Background()
			a := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			b := holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}
			for _, k := range []holdfast.Key{a, b} {
				e.stock(k, 5)
				e.strategy(k, s, 3)
			}
			cart := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}, {ItemID: 2, LocationID: 1, Quantity: 2}}
			// Expired, unswept: claimable as it is.
			h1, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuidFor(1), Lines: cart, TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Minute)
			if got, err := e.c.Hold(ctx, 1, h1.CheckoutID); err != nil || got.Status != holdfast.StatusExpired || !got.Claimable {
				t.Fatalf("expired unswept hold: %+v %v", got, err)
			}
			if _, err := e.c.Claim(ctx, 1, h1.CheckoutID); err != nil {
				t.Fatalf("claim of an expired, unswept hold: %v", err)
			}
			// Swept, stock still there: taken afresh.
			h2, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuidFor(2), Lines: cart, TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Minute)
			if n, err := e.c.SweepOnce(ctx); err != nil || n != 1 {
				t.Fatalf("sweep: %d %v", n, err)
			}
			if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: h2.CheckoutID, Lines: cart}); !errors.Is(err, holdfast.ErrHoldExpired) {
				t.Fatalf("reserve of an expired checkout: %v", err)
			}
			hc, err := e.c.Claim(ctx, 1, h2.CheckoutID)
			if err != nil || hc.Status != holdfast.StatusClaimed {
				t.Fatalf("late claim: %+v %v", hc, err)
			}
			if la := e.level(a); la.Available != 1 || la.Held != 0 {
				t.Fatalf("after late claim: %+v", la)
			}
			// Swept, and the stock went to someone else: refund.
			h3, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuidFor(3), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 1}}, TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Minute)
			if _, err := e.c.SweepOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := e.reserve(1, holdfast.Line{ItemID: 2, LocationID: 1, Quantity: 1}); err != nil {
				t.Fatal(err)
			}
			_, err = e.c.Claim(ctx, 1, h3.CheckoutID)
			var ee *holdfast.ExpiredError
			if !errors.As(err, &ee) || len(ee.Lines) != 1 || ee.Lines[0].ItemID != 2 {
				t.Fatalf("late claim without stock: %v", err)
			}
			if h, err := e.c.Hold(ctx, 1, h3.CheckoutID); err != nil || h.Status != holdfast.StatusExpired {
				t.Fatalf("after refused late claim: %+v %v", h, err)
			}
			if la := e.level(a); la.Available != 1 || la.Held != 0 {
				t.Fatalf("a refused late claim changed stock: %+v", la)
			}
			e.checkInvariant()
		})
	}
}

// TestExpiredHoldStillOwnsUnits is the first seed defect: a refill must
// count an expired hold that the sweeper has not taken yet, or the
// replenisher plus the sweep hand the same units out twice.
func TestExpiredHoldStillOwnsUnits(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 4, holdfast.Config{})
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			e.stock(k, 4)
			e.strategy(k, s, 10)
			h, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuidFor(1), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 4}}, TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Hour)
			if _, err := e.c.Replenish(ctx); err != nil {
				t.Fatal(err)
			}
			if l := e.level(k); l.Pooled != 0 || l.Held != 4 {
				t.Fatalf("replenish refilled units an expired, unswept hold owns: %+v", l)
			}
			if _, err := e.reserve(1, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 1}); !errors.Is(err, holdfast.ErrInsufficientStock) {
				t.Fatalf("reserve over an unswept hold: %v", err)
			}
			if _, err := e.c.Claim(ctx, 1, h.CheckoutID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.SweepOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if l := e.level(k); l.Available != 0 || l.Pooled != 0 {
				t.Fatalf("after claim and sweep: %+v", l)
			}
			e.checkInvariant()
		})
	}
}

// TestOverCommitted: a stock cut below the active holds applies (a fact
// about the warehouse), empties the buffer and reserves nothing more; a
// claim that would take available below zero is ErrOverCommitted and keeps
// the hold; the invariant check reports the key as over-committed, not as a
// violation.
func TestOverCommitted(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 4, holdfast.Config{})
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			e.stock(k, 10)
			e.strategy(k, s, 0)
			h1, _ := e.reserve(1, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 3})
			h2, err := e.reserve(1, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 3})
			if err != nil {
				t.Fatal(err)
			}
			e.stock(k, 4)
			l := e.level(k)
			if !l.OverCommitted || l.Pooled != 0 || l.Sellable != 0 || l.Available != 4 {
				t.Fatalf("after the cut: %+v", l)
			}
			rep, err := e.c.CheckInvariant(ctx)
			if err != nil || !rep.OK() || len(rep.OverCommitted) != 1 {
				t.Fatalf("invariant: %v %v", rep, err)
			}
			if _, err := e.c.Claim(ctx, 1, h1.CheckoutID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.Claim(ctx, 1, h2.CheckoutID); !errors.Is(err, holdfast.ErrOverCommitted) {
				t.Fatalf("claim past available: %v", err)
			}
			if h, _ := e.c.Hold(ctx, 1, h2.CheckoutID); h.Status != holdfast.StatusHeld {
				t.Fatalf("the refused claim's hold: %+v", h)
			}
			if _, err := e.c.Release(ctx, 1, h2.CheckoutID); err != nil {
				t.Fatal(err)
			}
			if l := e.level(k); l.OverCommitted || l.Sellable != 1 || l.Available != 1 {
				t.Fatalf("whole again: %+v", l)
			}
			if _, err := e.reserve(1, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 1}); err != nil {
				t.Fatal(err)
			}
			e.checkInvariant()
		})
	}
}

// TestIdempotentStockChange: a retried change with the same ID answers the
// first outcome and applies nothing; the same ID for another change is
// ErrIdempotencyConflict; IDs are per shop; every change is in the audit
// trail exactly once (the invariant check sums it).
func TestIdempotentStockChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, holdfast.Config{})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	ch := holdfast.StockChange{Key: k, Delta: 5, Reason: "restock", Reference: "po-1", ID: "po-1-line-1"}
	l1, err := e.c.ChangeStock(ctx, ch)
	if err != nil || l1.Available != 15 {
		t.Fatalf("first: %+v %v", l1, err)
	}
	if _, err := e.reserve(1, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 2}); err != nil {
		t.Fatal(err)
	}
	l2, err := e.c.ChangeStock(ctx, ch)
	if l1.Replayed || err != nil || !l2.Replayed {
		t.Fatalf("first %+v, retry %+v %v: want the first not replayed, the retry replayed", l1, l2, err)
	}
	if want := *l1; func() bool { want.Replayed = true; return *l2 != want }() {
		t.Fatalf("retry answered %+v; want the first outcome %+v, replayed", l2, l1)
	}
	// The id's bounds are every engine's: holdfast.StockChangeIDMaxLen
	// bytes of text without control characters.
	for _, id := range []string{string(make([]byte, holdfast.StockChangeIDMaxLen+1)), "a\nb"} {
		bad := ch
		bad.ID = id
		if _, err := e.c.ChangeStock(ctx, bad); !errors.Is(err, holdfast.ErrInvalidArgument) {
			t.Fatalf("stock change id %q: %v, want an argument error", id, err)
		}
	}
	if l := e.level(k); l.Available != 15 {
		t.Fatalf("the retry applied: %+v", l)
	}
	other := ch
	other.Delta = 6
	if _, err := e.c.ChangeStock(ctx, other); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
		t.Fatalf("same id, other change: %v", err)
	}
	k2 := holdfast.Key{ShopID: 2, ItemID: 1, LocationID: 1}
	if l, err := e.c.ChangeStock(ctx, holdfast.StockChange{Key: k2, Delta: 5, Reason: "restock", Reference: "po-1", ID: "po-1-line-1"}); err != nil || l.Available != 5 {
		t.Fatalf("same id in another shop: %+v %v", l, err)
	}
	// Concurrent retries: one applies.
	set := 30
	burst := holdfast.StockChange{Key: k, Set: &set, Reason: "stocktake", ID: "count-7"}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := e.c.ChangeStock(ctx, burst)
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if l := e.level(k); l.Available != 30 {
		t.Fatalf("after the burst: %+v", l)
	}
	var entries int
	if err := e.db.DB.QueryRow("SELECT COUNT(*) FROM inventory_ledger WHERE reason = 'stocktake'").Scan(&entries); err != nil || entries != 1 {
		t.Fatalf("stocktake audit entries: %d %v", entries, err)
	}
	// The ledger is append-only.
	if _, err := e.db.DB.Exec("UPDATE inventory_ledger SET delta = 0"); err == nil {
		t.Fatal("the ledger accepted an UPDATE")
	}
	if _, err := e.db.DB.Exec("DELETE FROM inventory_ledger"); err == nil {
		t.Fatal("the ledger accepted a DELETE")
	}
	e.checkInvariant()
}
