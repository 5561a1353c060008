package enginetest

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Per-buyer limits and safety stock (issue #16 items 3 and 4).

// testBuyerLimitsAndSafety runs the suite's buyer-limit and safety-stock
// tests, in parallel.
func testBuyerLimitsAndSafety(t *testing.T, h *Harness) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h *Harness)
	}{
		{"Concurrent", testBuyerLimitConcurrent},
		{"Window", testBuyerLimitWindow},
		{"LateClaim", testBuyerLateClaim},
		{"OtherBuyerRetry", testBuyerOtherRetry},
		{"IDNotStored", testBuyerIDNotStored},
		{"Arguments", testBuyerArguments},
		{"SafetyStock", testSafetyStock},
		{"Randomized", testSafetyAndLimitsRandomized},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// buyerReserve reserves lines for a named buyer under a new checkout id.
func (e *env) buyerReserve(shop int64, buyer string, lines []holdfast.Line, ttl time.Duration) (uuid.UUID, *holdfast.Hold, error) {
	id := uuid.New()
	h, err := e.e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: lines, TTL: ttl, BuyerID: buyer})
	return id, h, err
}

func (e *env) setBuyerLimit(shop, item int64, limit int, window time.Duration) {
	e.t.Helper()
	if err := e.e.SetBuyerLimit(ctxb(), holdfast.BuyerLimit{ShopID: shop, ItemID: item, Limit: limit, Window: window}); err != nil {
		e.t.Fatalf("set buyer limit %d of item %d: %v", limit, item, err)
	}
}

// wantBuyerLimit fails unless err is a *BuyerLimitError for item with the
// given limit, held and requested, naming both in its message.
func wantBuyerLimit(t *testing.T, err error, item int64, limit, held, requested int) {
	t.Helper()
	var ble *holdfast.BuyerLimitError
	if !errors.Is(err, holdfast.ErrBuyerLimitExceeded) || !errors.As(err, &ble) {
		t.Fatalf("got %v, want a *BuyerLimitError", err)
	}
	want := holdfast.BuyerLimitError{ItemID: item, Limit: limit, Held: held, Requested: requested}
	if *ble != want {
		t.Fatalf("got %+v, want %+v", *ble, want)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("limit %d", limit)) || !strings.Contains(msg, fmt.Sprintf("holds %d", held)) {
		t.Fatalf("message %q does not name the limit and what the buyer holds", msg)
	}
}

// testBuyerLimitConcurrent: 32 concurrent checkouts of one buyer (and 8 of
// another) on one limited item never hold more than the limit together;
// every refusal names the limit and what the buyer held, and its numbers
// add up; a reservation without a buyer id is not limited.
func testBuyerLimitConcurrent(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{Conns: 48})
		const limit, workers, others = 5, 32, 8
		k := key(1, 10)
		e.stock(k, 1000)
		e.setBuyerLimit(1, 10, limit, time.Hour)

		type result struct {
			buyer string
			q     int
			err   error
		}
		results := make([]result, workers+others)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range results {
			buyer := "buyer-a"
			if i >= workers {
				buyer = "buyer-b"
			}
			q := 1 + i%2
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, _, err := e.buyerReserve(1, buyer, one(10, q), 0)
				results[i] = result{buyer, q, err}
			}()
		}
		close(start)
		wg.Wait()

		granted := map[string]int{}
		refused := map[string]int{}
		for _, r := range results {
			var ble *holdfast.BuyerLimitError
			switch {
			case r.err == nil:
				granted[r.buyer] += r.q
			case errors.As(r.err, &ble):
				refused[r.buyer]++
				if ble.ItemID != 10 || ble.Limit != limit || ble.Requested != r.q || ble.Held+r.q <= limit || ble.Held > limit {
					t.Errorf("%s: refusal %+v does not add up (limit %d, asked %d)", r.buyer, *ble, limit, r.q)
				}
				if !strings.Contains(r.err.Error(), fmt.Sprintf("limit %d", limit)) || !strings.Contains(r.err.Error(), fmt.Sprintf("holds %d", ble.Held)) {
					t.Errorf("message %q does not name the limit and what the buyer holds", r.err)
				}
			default:
				t.Errorf("%s: reserve %d: %v", r.buyer, r.q, r.err)
			}
		}
		t.Logf("strategy %s: limit %d; buyer-a: %d checkouts granted %d units, %d refused; buyer-b: %d checkouts granted %d units, %d refused",
			s, limit, workers, granted["buyer-a"], refused["buyer-a"], others, granted["buyer-b"], refused["buyer-b"])
		for _, b := range []string{"buyer-a", "buyer-b"} {
			// Over the limit is the defect; below limit-1 means a refusal
			// that should have been a grant (every ask is 1 or 2 units).
			if granted[b] > limit || granted[b] < limit-1 {
				t.Errorf("%s was granted %d units with a limit of %d", b, granted[b], limit)
			}
		}
		if l := e.level(k); l.Held != granted["buyer-a"]+granted["buyer-b"] {
			t.Errorf("level %+v, want held %d", l, granted["buyer-a"]+granted["buyer-b"])
		}
		// No buyer id: not limited.
		e.mustReserve(1, one(10, 2*limit), 0)
		// Releasing gives the allowance back.
		_, _, err := e.buyerReserve(1, "buyer-a", one(10, 1), 0)
		if granted["buyer-a"] == limit {
			wantBuyerLimit(t, err, 10, limit, limit, 1)
		}
	})
}

// testBuyerLimitWindow: claims count within the window and not after it,
// releases and sweeps give the allowance back (an expired hold not swept
// yet still counts: it can still be claimed), a retry of an admitted
// checkout is answered with its hold, the limit covers the item at every
// location, other items, buyers and shops are apart, and a removed limit
// no longer applies.
func testBuyerLimitWindow(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	for _, k := range []holdfast.Key{key(1, 10), {ShopID: 1, ItemID: 10, LocationID: 2}, key(1, 11), key(2, 10)} {
		e.stock(k, 100)
	}
	e.setBuyerLimit(1, 10, 3, time.Hour)
	if l, err := e.e.BuyerLimit(ctx, 1, 10); err != nil || *l != (holdfast.BuyerLimit{ShopID: 1, ItemID: 10, Limit: 3, Window: time.Hour}) {
		t.Fatalf("read limit: %+v, %v", l, err)
	}
	if _, err := e.e.BuyerLimit(ctx, 1, 11); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("read missing limit: %v, want ErrNotFound", err)
	}

	// Claims count within the window.
	claimed, _, err := e.buyerReserve(1, "ann", one(10, 2), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.e.Claim(ctx, 1, claimed); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.buyerReserve(1, "ann", one(10, 2), 0)
	wantBuyerLimit(t, err, 10, 3, 2, 2)

	// Up to the limit; a retry of an admitted checkout answers its hold.
	x, hx, err := e.buyerReserve(1, "ann", one(10, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: x, Lines: one(10, 1), BuyerID: "ann"})
	if err != nil || !again.Replayed || again.ExpiresAt != hx.ExpiresAt {
		t.Fatalf("retry at the limit: %+v, %v; want the hold replayed", again, err)
	}
	_, _, err = e.buyerReserve(1, "ann", one(10, 1), 0)
	wantBuyerLimit(t, err, 10, 3, 3, 1)

	// The limit covers the item at every location, per cart.
	_, _, err = e.buyerReserve(1, "bob", []holdfast.Line{{ItemID: 10, LocationID: 1, Quantity: 2}, {ItemID: 10, LocationID: 2, Quantity: 2}}, 0)
	wantBuyerLimit(t, err, 10, 3, 0, 4)
	if _, _, err := e.buyerReserve(1, "bob", []holdfast.Line{{ItemID: 10, LocationID: 1, Quantity: 1}, {ItemID: 10, LocationID: 2, Quantity: 2}, {ItemID: 11, LocationID: 1, Quantity: 50}}, 0); err != nil {
		t.Fatalf("bob's cart within the limit: %v", err)
	}
	// Other buyers, unlimited items and other shops are apart.
	if _, _, err := e.buyerReserve(1, "cat", one(10, 3), 0); err != nil {
		t.Fatalf("another buyer: %v", err)
	}
	if _, _, err := e.buyerReserve(1, "ann", one(11, 10), 0); err != nil {
		t.Fatalf("an item without a limit: %v", err)
	}
	if _, _, err := e.buyerReserve(2, "ann", one(10, 10), 0); err != nil {
		t.Fatalf("the same buyer id in another shop: %v", err)
	}

	// A release gives the allowance back.
	if _, err := e.e.Release(ctx, 1, x); err != nil {
		t.Fatal(err)
	}
	y, _, err := e.buyerReserve(1, "ann", one(10, 1), time.Minute)
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	// Expired but not swept: still claimable, so still counted.
	e.Clock.Advance(2 * time.Minute)
	_, _, err = e.buyerReserve(1, "ann", one(10, 1), 0)
	wantBuyerLimit(t, err, 10, 3, 3, 1)
	// Swept: the allowance is back.
	if n := e.sweep(0); n < 1 {
		t.Fatalf("sweep expired %d holds, want y (%s)", n, y)
	}
	z, _, err := e.buyerReserve(1, "ann", one(10, 1), 0)
	if err != nil {
		t.Fatalf("after the sweep: %v", err)
	}
	if _, err := e.e.Release(ctx, 1, z); err != nil {
		t.Fatal(err)
	}

	// The claim leaves the window.
	e.Clock.Advance(time.Hour)
	if _, _, err := e.buyerReserve(1, "ann", one(10, 3), 0); err != nil {
		t.Fatalf("after the window: %v", err)
	}

	// Window 0: every claim on record counts.
	e.setBuyerLimit(1, 11, 60, 0)
	e.Clock.Advance(2 * time.Hour)
	w, _, err := e.buyerReserve(1, "dan", one(11, 20), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.e.Claim(ctx, 1, w); err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(20 * time.Hour)
	_, _, err = e.buyerReserve(1, "dan", one(11, 41), 0)
	wantBuyerLimit(t, err, 11, 60, 20, 41)

	// A lower limit applies from then on; a removed one no longer does
	// (the sweep frees the stock of the holds the clock expired).
	e.sweep(0)
	e.setBuyerLimit(1, 11, 0, 0)
	_, _, err = e.buyerReserve(1, "eve", one(11, 1), 0)
	wantBuyerLimit(t, err, 11, 0, 0, 1)
	if err := e.e.RemoveBuyerLimit(ctx, 1, 11); err != nil {
		t.Fatal(err)
	}
	if err := e.e.RemoveBuyerLimit(ctx, 1, 11); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
	if _, err := e.e.BuyerLimit(ctx, 1, 11); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("read removed limit: %v, want ErrNotFound", err)
	}
	if _, _, err := e.buyerReserve(1, "dan", one(11, 41), 0); err != nil {
		t.Fatalf("after the limit was removed: %v", err)
	}
}

// testBuyerIDNotStored: the raw buyer id is nowhere in the engine's tables
// (only its keyed hash is).
func testBuyerIDNotStored(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	if e.Grep == nil {
		t.Skip("the harness gives no Instance.Grep")
	}
	ctx := ctxb()
	e.stock(key(1, 10), 10)
	e.setBuyerLimit(1, 10, 5, 0)
	const buyer = "raw-buyer-7f3a9c@example.com"
	id, _, err := e.buyerReserve(1, buyer, one(10, 2), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.e.Claim(ctx, 1, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.buyerReserve(1, buyer, one(10, 1), 0); err != nil {
		t.Fatal(err)
	}
	// The check can fail: a probe it must find.
	if found, err := e.Grep(ctx, "test stock"); err != nil || !found {
		t.Fatalf("Grep does not find the ledger's reason: %v, %v", found, err)
	}
	for _, s := range []string{buyer, "raw-buyer-7f3a9c", "7f3a9c@example"} {
		found, err := e.Grep(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			t.Errorf("the raw buyer id (%q) is stored", s)
		}
	}
}

// testBuyerArguments: bad buyer ids, limits and safety stocks are
// *ArgumentErrors naming the field, and change nothing.
func testBuyerArguments(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	k := key(1, 10)
	e.stock(k, 10)
	e.setBuyerLimit(1, 10, 4, time.Hour)
	if _, err := e.e.SetSafetyStock(ctx, k, 2); err != nil {
		t.Fatal(err)
	}
	rows := func() map[string]int {
		if e.Rows == nil {
			return nil
		}
		r, err := e.Rows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	beforeRows, beforeLevel := rows(), *e.level(k)
	id := uuid.New()
	reserve := func(buyer string) func() error {
		return func() error {
			_, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(10, 1), BuyerID: buyer})
			return err
		}
	}
	limit := func(l holdfast.BuyerLimit) func() error {
		return func() error { return e.e.SetBuyerLimit(ctx, l) }
	}
	safety := func(k holdfast.Key, n int) func() error {
		return func() error { _, err := e.e.SetSafetyStock(ctx, k, n); return err }
	}
	cases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"buyer id too long", reserve(strings.Repeat("b", holdfast.BuyerIDMaxLen+1)), "buyer_id"},
		{"buyer id with a space", reserve("ann smith"), "buyer_id"},
		{"buyer id with a control character", reserve("ann\n"), "buyer_id"},
		{"buyer id not ASCII", reserve("anné"), "buyer_id"},
		{"buyer id with NUL", reserve("ann\x00"), "buyer_id"},
		{"negative limit", limit(holdfast.BuyerLimit{ShopID: 1, ItemID: 10, Limit: -1}), "limit"},
		{"limit too large", limit(holdfast.BuyerLimit{ShopID: 1, ItemID: 10, Limit: holdfast.AvailableMax + 1}), "limit"},
		{"negative window", limit(holdfast.BuyerLimit{ShopID: 1, ItemID: 10, Limit: 1, Window: -time.Second}), "window"},
		{"window past the retention", limit(holdfast.BuyerLimit{ShopID: 1, ItemID: 10, Limit: 1, Window: holdfast.OutcomeRetentionDefault + time.Second}), "window"},
		{"limit of shop 0", limit(holdfast.BuyerLimit{ShopID: 0, ItemID: 10, Limit: 1}), "shop_id"},
		{"limit of item 0", limit(holdfast.BuyerLimit{ShopID: 1, ItemID: 0, Limit: 1}), "item_id"},
		{"read limit of item -1", func() error { _, err := e.e.BuyerLimit(ctx, 1, -1); return err }, "item_id"},
		{"remove limit of shop 0", func() error { return e.e.RemoveBuyerLimit(ctx, 0, 10) }, "shop_id"},
		{"negative safety", safety(k, -1), "safety"},
		{"safety too large", safety(k, holdfast.AvailableMax+1), "safety"},
		{"safety of location 0", safety(holdfast.Key{ShopID: 1, ItemID: 10}, 1), "location_id"},
	}
	for _, tc := range cases {
		err := tc.call()
		var ae *holdfast.ArgumentError
		if !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("%s: got %v, want an *ArgumentError for %q", tc.name, err, tc.field)
		}
	}
	if after := rows(); !maps.Equal(beforeRows, after) {
		t.Errorf("rejected calls wrote rows: %v, then %v", beforeRows, after)
	}
	if after := *e.level(k); after != beforeLevel {
		t.Errorf("rejected calls changed the level: %+v, then %+v", beforeLevel, after)
	}
	if l, err := e.e.BuyerLimit(ctx, 1, 10); err != nil || l.Limit != 4 || l.Window != time.Hour {
		t.Errorf("rejected calls changed the limit: %+v, %v", l, err)
	}
	if _, err := e.e.Hold(ctx, 1, id); !errors.Is(err, holdfast.ErrNotFound) {
		t.Errorf("a rejected reservation left a hold: %v", err)
	}
	// The longest valid id is fine.
	if _, _, err := e.buyerReserve(1, strings.Repeat("~", holdfast.BuyerIDMaxLen), one(10, 1), 0); err != nil {
		t.Errorf("longest buyer id: %v", err)
	}
}

// testSafetyStock: a key's safety stock is withheld from sale — level
// reads show it, reservations and refills never reach into it — while
// claims and stock changes behave as before; a safety stock raised over
// active holds stops sales without touching the holds.
func testSafetyStock(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{})
		ctx := ctxb()
		k := key(1, 20)
		e.stock(k, 10)
		l, err := e.e.SetSafetyStock(ctx, k, 3)
		if err != nil {
			t.Fatal(err)
		}
		if l.Safety != 3 || l.Sellable != 7 || l.Available != 10 || l.Pooled > 7 {
			t.Fatalf("after safety 3: %+v", l)
		}
		e.assertSellable(k, 7)

		held := e.mustReserve(1, one(20, 5), 0)
		if l := e.level(k); l.Sellable != 2 || l.Safety != 3 || l.Held != 5 {
			t.Fatalf("after holding 5: %+v", l)
		}
		_, err = e.reserve(1, uuid.New(), one(20, 3))
		var ise *holdfast.InsufficientStockError
		if !errors.As(err, &ise) || ise.Lines[0].Sellable != 2 {
			t.Fatalf("reserve 3 of 2 sellable: %v", err)
		}

		// Raised over what is free: sales stop, the hold stays claimable.
		l, err = e.e.SetSafetyStock(ctx, k, 8)
		if err != nil {
			t.Fatal(err)
		}
		if l.Sellable != 0 || l.Pooled != 0 || l.OverCommitted || l.Held != 5 {
			t.Fatalf("after safety 8 over a hold of 5: %+v", l)
		}
		e.assertSellable(k, 0)
		if _, err := e.e.Claim(ctx, 1, held); err != nil {
			t.Fatalf("claim under a raised safety stock: %v", err)
		}
		if l := e.level(k); l.Available != 5 || l.Held != 0 || l.Sellable != 0 || l.Safety != 8 {
			t.Fatalf("after the claim: %+v", l)
		}

		// Stock changes as before, sellable above the safety stock.
		if _, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 10, Reason: "restock"}); err != nil {
			t.Fatal(err)
		}
		e.assertSellable(k, 7)
		// A reduction shrinks the buffer to fit the safety stock too.
		if _, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: -3, Reason: "shrinkage"}); err != nil {
			t.Fatal(err)
		}
		if l := e.level(k); l.Available != 12 || l.Sellable != 4 || l.Pooled > 4 {
			t.Fatalf("after a reduction: %+v", l)
		}
		e.assertSellable(k, 4)
		// Lowered: sellable at once.
		if l, err := e.e.SetSafetyStock(ctx, k, 0); err != nil || l.Safety != 0 || l.Sellable != 12 {
			t.Fatalf("safety 0: %+v, %v", l, err)
		}
		e.assertSellable(k, 12)

		// A new key: created with nothing available.
		if l, err := e.e.SetSafetyStock(ctx, key(1, 21), 4); err != nil || l.Available != 0 || l.Safety != 4 || l.Sellable != 0 {
			t.Fatalf("safety of a new key: %+v, %v", l, err)
		}
		e.stock(key(1, 21), 6)
		e.assertSellable(key(1, 21), 2)
		if rep := e.checkInvariant(false); rep.Keys < 2 {
			t.Fatalf("invariant saw %d keys", rep.Keys)
		}
	})
}

// testSafetyAndLimitsRandomized: reservations with and without buyer ids,
// claims, releases, stock changes, safety stock changes, refills and
// invariant checks race over two keys; the invariant (with the safety
// stock) holds while it runs and after, every held hold is claimable
// unless its key was over-committed, and no buyer ends up with more than
// the limit in held and claimed units. The seed is logged; HOLDFAST_SEED=n
// replays it (the interleaving is the machine's).
func testSafetyAndLimitsRandomized(t *testing.T, h *Harness) {
	t.Parallel()
	seed := seedFor(t)
	iterations, workers := 50, 8
	if long() {
		iterations, workers = 1000, 16
	}
	for _, s := range h.Strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d (replay with HOLDFAST_SEED=%d)", seed, seed)
			e := h.newEnv(t, holdfast.Config{Strategy: s, PoolCap: 5, Slots: 3}, Options{Conns: workers + 4})
			e.allowOver = true
			ctx := ctxb()
			const limit = 3
			keys := []holdfast.Key{key(1, 1), key(1, 2)}
			for _, k := range keys {
				e.stock(k, 20)
			}
			e.setBuyerLimit(1, 1, limit, 0)
			buyers := []string{"", "ann", "bob", "cat"}
			type made struct {
				id    uuid.UUID
				buyer string
				q     int // units of item 1
			}
			var mu sync.Mutex
			var holds []made
			var bad errorSink
			var wg sync.WaitGroup
			for g := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					pick := func() (made, bool) {
						mu.Lock()
						defer mu.Unlock()
						if len(holds) == 0 {
							return made{}, false
						}
						return holds[r.IntN(len(holds))], true
					}
					for range iterations {
						switch r.IntN(8) {
						case 0, 1, 2:
							buyer := buyers[r.IntN(len(buyers))]
							var lines []holdfast.Line
							q1 := 0
							for _, i := range r.Perm(len(keys))[:1+r.IntN(2)] {
								q := 1 + r.IntN(2)
								if keys[i].ItemID == 1 {
									q1 = q
								}
								lines = append(lines, holdfast.Line{ItemID: keys[i].ItemID, LocationID: 1, Quantity: q})
							}
							id := uuid.New()
							_, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: lines, BuyerID: buyer})
							switch {
							case err == nil:
								mu.Lock()
								holds = append(holds, made{id, buyer, q1})
								mu.Unlock()
							case errors.Is(err, holdfast.ErrInsufficientStock), errors.Is(err, holdfast.ErrBuyerLimitExceeded) && buyer != "":
							default:
								bad.add("reserve: %v", err)
							}
						case 3:
							if m, ok := pick(); ok {
								if _, err := e.e.Claim(ctx, 1, m.id); err != nil && !errors.Is(err, holdfast.ErrHoldReleased) && !errors.Is(err, holdfast.ErrOverCommitted) {
									bad.add("claim: %v", err)
								}
							}
						case 4:
							if m, ok := pick(); ok {
								if _, err := e.e.Release(ctx, 1, m.id); err != nil && !errors.Is(err, holdfast.ErrHoldClaimed) {
									bad.add("release: %v", err)
								}
							}
						case 5:
							if _, err := e.e.SetSafetyStock(ctx, keys[r.IntN(len(keys))], r.IntN(12)); err != nil {
								bad.add("safety: %v", err)
							}
						case 6:
							k := keys[r.IntN(len(keys))]
							if _, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: r.IntN(7) - 2, Reason: "random adjust"}); err != nil && !errors.Is(err, holdfast.ErrInvalidArgument) {
								bad.add("adjust: %v", err)
							}
						case 7:
							if e.Refill != nil && r.IntN(2) == 0 {
								if err := e.Refill(ctx); err != nil {
									bad.add("refill: %v", err)
								}
								continue
							}
							rep, err := e.e.CheckInvariant(ctx)
							if err != nil {
								bad.add("check: %v", err)
							} else if !rep.OK() {
								bad.add("invariant broken mid-run: %s", rep)
							}
						}
					}
				}()
			}
			wg.Wait()
			if bad.n.Load() > 0 {
				t.Logf("seed %d failed", seed)
			}
			bad.check(t)
			e.checkInvariant(true)
			// No buyer has more than the limit in held and claimed units.
			per := map[string]int{}
			for _, m := range holds {
				if st := e.hold(1, m.id).Status; m.buyer != "" && (st == holdfast.StatusHeld || st == holdfast.StatusClaimed) {
					per[m.buyer] += m.q
				}
			}
			for b, n := range per {
				if n > limit {
					t.Errorf("seed %d: buyer %s has %d units of item 1 held or claimed, limit %d", seed, b, n, limit)
				}
			}
			for _, m := range holds {
				if e.hold(1, m.id).Status != holdfast.StatusHeld {
					continue
				}
				if _, err := e.e.Claim(ctx, 1, m.id); err != nil && !errors.Is(err, holdfast.ErrOverCommitted) {
					t.Fatalf("seed %d: held checkout %s not claimable: %v", seed, m.id, err)
				}
			}
			e.checkInvariant(true)
		})
	}
}

// testBuyerLateClaim: a late claim takes a swept hold's units afresh, so it
// is held to the buyer's limits like a new reservation: refused (nothing
// changed) while the buyer's newer hold fills the allowance, claimed once
// that hold is released.
func testBuyerLateClaim(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	e.stock(key(1, 10), 10)
	e.setBuyerLimit(1, 10, 2, 0)
	old, _, err := e.buyerReserve(1, "ann", one(10, 2), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.sweep(2 * time.Minute); n != 1 {
		t.Fatalf("sweep expired %d holds, want 1", n)
	}
	newer, _, err := e.buyerReserve(1, "ann", one(10, 2), 0)
	if err != nil {
		t.Fatalf("after the sweep: %v", err)
	}
	_, err = e.e.Claim(ctx, 1, old)
	wantBuyerLimit(t, err, 10, 2, 2, 2)
	if got := e.hold(1, old); got.Status != holdfast.StatusExpired {
		t.Fatalf("a refused late claim changed the hold: %+v", got)
	}
	if l := e.level(key(1, 10)); l.Available != 10 || l.Held != 2 {
		t.Fatalf("a refused late claim changed the level: %+v", l)
	}
	if _, err := e.e.Release(ctx, 1, newer); err != nil {
		t.Fatal(err)
	}
	if got, err := e.e.Claim(ctx, 1, old); err != nil || got.Status != holdfast.StatusClaimed {
		t.Fatalf("late claim within the limit: %+v, %v", got, err)
	}
	_, _, err = e.buyerReserve(1, "ann", one(10, 1), 0)
	wantBuyerLimit(t, err, 10, 2, 2, 1)
}

// testBuyerOtherRetry: a retry of a checkout (same id, same lines) under
// another buyer id, or without the buyer id it was made with, or with one
// when it was made without, is ErrIdempotencyConflict, not a replay of the
// first buyer's hold (issue 24 item 6); the same buyer's retry replays.
// Plain and allocated lines, limited and unlimited items.
func testBuyerOtherRetry(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	e.stock(key(1, 10), 10)
	e.stock(key(1, 11), 10)
	e.setBuyerLimit(1, 10, 5, 0)
	e.stock(holdfast.Key{ShopID: 1, ItemID: 12, LocationID: 2}, 10)
	if err := e.e.SetLocationOrder(ctx, 1, []int64{2}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		lines []holdfast.Line
		first string
	}{
		{"limited", one(10, 1), "ann"},
		{"unlimited", one(11, 1), "ann"},
		{"no buyer first", one(11, 1), ""},
		{"allocated", []holdfast.Line{{ItemID: 12, Quantity: 1}}, "ann"},
	} {
		id := uuid.New()
		p := holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: tc.lines, BuyerID: tc.first}
		if _, err := e.e.Reserve(ctx, p); err != nil {
			t.Fatalf("%s: first reservation: %v", tc.name, err)
		}
		for _, other := range []string{"bob", ""} {
			if other == tc.first {
				other = "carl"
			}
			q := p
			q.BuyerID = other
			got, err := e.e.Reserve(ctx, q)
			if !errors.Is(err, holdfast.ErrIdempotencyConflict) {
				t.Errorf("%s: retry made for buyer %q under buyer %q: %+v, %v; want ErrIdempotencyConflict", tc.name, tc.first, other, got, err)
			}
		}
		got, err := e.e.Reserve(ctx, p)
		if err != nil || !got.Replayed {
			t.Errorf("%s: the same buyer's retry: %+v, %v; want a replay", tc.name, got, err)
		}
	}
}
