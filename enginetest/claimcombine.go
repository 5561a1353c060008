package enginetest

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// testClaimsCombined (#29 item 6): a client's concurrent claims — which an
// engine may serve in combined transactions (engine/claimcombine.go) —
// each answer as a claim on its own does, and leave the ledger, the
// events and the invariant as claims on their own leave them. Where the
// engine reports its claim transactions (Instance.ClaimTransactions), the
// claims must also have been combined.
func testClaimsCombined(t *testing.T, h *Harness) {
	t.Run("AnswersLedgerEvents", func(t *testing.T) { t.Parallel(); testClaimsCombinedAnswers(t, h) })
	t.Run("OverCommitted", func(t *testing.T) { t.Parallel(); testClaimsCombinedOverCommitted(t, h) })
	t.Run("EndWaits", func(t *testing.T) { t.Parallel(); testClaimsCombinedEndWaits(t, h) })
}

// claimsEnv is an engine on the database's own clock (the claims' ledger
// entries then carry their transactions' times) with connections for 32
// concurrent claims.
func (h *Harness) claimsEnv(t *testing.T) *env {
	return h.newEnv(t, holdfast.Config{}, Options{Conns: 40, RealClock: true})
}

// checkCombined fails t when the engine reports its claim transactions
// and claims took as many as there were claims.
func (e *env) checkCombined(claims int) {
	e.t.Helper()
	if e.ClaimTransactions == nil {
		return
	}
	n, err := e.ClaimTransactions(ctxb())
	if err != nil {
		e.t.Fatal(err)
	}
	if n >= claims {
		e.t.Fatalf("claims were not combined: %d transactions for %d claims", n, claims)
	}
	e.t.Logf("%d claims in %d transactions", claims, n)
}

// ledger is every entry of k's ledger, oldest first.
func (e *env) ledger(k holdfast.Key) []holdfast.LedgerEntry {
	e.t.Helper()
	var out []holdfast.LedgerEntry
	after := ""
	for {
		page, err := e.e.Ledger(ctxb(), holdfast.LedgerQuery{Key: k, After: after, Limit: 100})
		if err != nil {
			e.t.Fatalf("ledger of %+v: %v", k, err)
		}
		out = append(out, page.Entries...)
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	slices.Reverse(out)
	return out
}

// testClaimsCombinedAnswers: 120 claims from 32 goroutines over two keys
// (one- and two-line holds) each answer claimed, not replayed, with their
// lines; a second claim replays. Each claimed line has its ledger entry
// under its checkout, marked as a claim, each key's entries chain
// (available_after of one is the one before's plus its delta) down to the
// level's available; every claim wrote its hold.claimed event and no
// stock.changed one.
func testClaimsCombinedAnswers(t *testing.T, h *Harness) {
	e := h.claimsEnv(t)
	const shop, stock, holds = 1, 1000, 120
	keys := []holdfast.Key{{ShopID: shop, ItemID: 1, LocationID: 1}, {ShopID: shop, ItemID: 2, LocationID: 1}}
	for _, k := range keys {
		e.stock(k, stock)
	}
	ids := make([]uuid.UUID, holds)
	want := map[int64]int{}              // units claimed per item
	wantOf := map[string]map[int64]int{} // units per item, per checkout
	for i := range ids {
		lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1 + i%3}}
		if i%2 == 1 {
			lines = append(lines, holdfast.Line{ItemID: 2, LocationID: 1, Quantity: 1})
		}
		ids[i] = e.mustReserve(shop, lines, 0)
		wantOf[ids[i].String()] = map[int64]int{}
		for _, l := range lines {
			want[l.ItemID] += l.Quantity
			wantOf[ids[i].String()][l.ItemID] += l.Quantity
		}
	}

	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < holds; i += 32 {
				h, err := e.e.Claim(ctxb(), shop, ids[i])
				switch {
				case err != nil:
					t.Errorf("claim %d: %v", i, err)
				case h.Status != holdfast.StatusClaimed || h.Replayed || h.EndedAt == nil || len(h.Lines) != 1+i%2:
					t.Errorf("claim %d answered %+v", i, h)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if h, err := e.e.Claim(ctxb(), shop, ids[0]); err != nil || !h.Replayed || h.Status != holdfast.StatusClaimed {
		t.Fatalf("second claim: %+v %v", h, err)
	}
	e.checkCombined(holds)

	got := map[string]map[int64]int{}
	for _, k := range keys {
		entries := e.ledger(k)
		for i, en := range entries {
			if i > 0 && en.AvailableAfter != entries[i-1].AvailableAfter+en.Delta {
				t.Fatalf("key %+v: entry %d (%+v) does not chain from the one before (%+v)", k, i, en, entries[i-1])
			}
			if en.Reason != "claim" {
				continue
			}
			if got[en.Reference] == nil {
				got[en.Reference] = map[int64]int{}
			}
			got[en.Reference][k.ItemID] -= en.Delta
		}
		lvl := e.level(k)
		if last := entries[len(entries)-1].AvailableAfter; lvl.Available != stock-want[k.ItemID] || last != lvl.Available || lvl.Held != 0 {
			t.Fatalf("key %+v: available %d (last ledger entry %d), held %d; want available %d, held 0", k, lvl.Available, last, lvl.Held, stock-want[k.ItemID])
		}
	}
	for ref, units := range wantOf {
		if !maps.Equal(got[ref], units) {
			t.Fatalf("checkout %s: claim entries %v; want its lines %v", ref, got[ref], units)
		}
	}
	claimed := 0
	for _, ev := range e.events(shop, 0) {
		switch {
		case ev.Type == holdfast.EventHoldClaimed:
			claimed++
		case ev.Type == holdfast.EventStockChanged && ev.Reason == "claim":
			t.Fatalf("a claim wrote a stock.changed event: %+v", ev)
		}
	}
	if claimed != holds {
		t.Fatalf("%d hold.claimed events; want %d", claimed, holds)
	}
}

// testClaimsCombinedOverCommitted: claims that a combined transaction
// would take an over-committed key below zero with are answered on their
// own: the key's claims succeed while its units last and the rest answer
// ErrOverCommitted, changing nothing; the other key's claims, in the same
// batches, all succeed.
func testClaimsCombinedOverCommitted(t *testing.T, h *Harness) {
	e := h.claimsEnv(t)
	e.allowOver = true
	const shop, per = 1, 8
	over := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
	fine := holdfast.Key{ShopID: shop, ItemID: 2, LocationID: 1}
	var ids []uuid.UUID
	for _, k := range []holdfast.Key{over, fine} {
		e.stock(k, 100)
		for range per {
			ids = append(ids, e.mustReserve(shop, []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}, 0))
		}
	}
	const left = 3 // available on the over-committed key: below its 8 held
	e.stock(over, left)
	var mu sync.Mutex
	ok := map[int64]int{}
	refused := 0
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := e.e.Claim(ctxb(), shop, id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok[h.Lines[0].ItemID]++
			case errors.Is(err, holdfast.ErrOverCommitted) && i < per:
				refused++
			default:
				t.Errorf("claim %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if ok[over.ItemID] != left || refused != per-left || ok[fine.ItemID] != per {
		t.Fatalf("claimed %d of the over-committed key (want %d), refused %d (want %d), claimed %d of the other (want %d)",
			ok[over.ItemID], left, refused, per-left, ok[fine.ItemID], per)
	}
	if lvl := e.level(over); lvl.Available != 0 || lvl.Held != per-left {
		t.Fatalf("over-committed key after the claims: %+v; want available 0, held %d", lvl, per-left)
	}
}

// testClaimsCombinedEndWaits: claims end the waits they made unservable
// before they answer, combined or not: once every claim has returned, a
// wait for more units than are left is unservable, without a pass of the
// waitlist server.
func testClaimsCombinedEndWaits(t *testing.T, h *Harness) {
	e := h.claimsEnv(t)
	const shop, stock, holders = 1, 40, 39
	k := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
	e.stock(k, stock)
	one := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
	ids := make([]uuid.UUID, holders)
	for i := range ids {
		ids[i] = e.mustReserve(shop, one, 0)
	}
	// A wait for 2: servable while a held unit may come back, unservable
	// only once the last of the 39 is claimed (1 left).
	w := uuid.New()
	_, err := e.e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: shop, CheckoutID: w, Wait: 10 * time.Minute,
		Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: stock - holders + 1}}})
	if we := (*holdfast.WaitlistedError)(nil); !errors.As(err, &we) {
		t.Fatalf("the wait: %v, want *WaitlistedError", err)
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.e.Claim(ctxb(), shop, id); err != nil {
				t.Errorf("claim: %v", err)
			}
		}()
	}
	wg.Wait()
	e.checkCombined(holders)
	if _, err := e.e.Hold(ctxb(), shop, w); !errors.Is(err, holdfast.ErrWaitUnservable) {
		t.Fatalf("the wait once its units were claimed: %v, want ErrWaitUnservable", err)
	}
}
