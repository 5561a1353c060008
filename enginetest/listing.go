package enginetest

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// allHolds pages through q with the given page size and returns every hold
// listed, in order, failing on a page larger than asked or a loop.
func allHolds(t *testing.T, e holdfast.Engine, q holdfast.HoldQuery) []holdfast.Hold {
	t.Helper()
	var out []holdfast.Hold
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatalf("holds %+v: no end after %d pages", q, pages)
		}
		p, err := e.Holds(ctxb(), q)
		if err != nil {
			t.Fatalf("holds %+v: %v", q, err)
		}
		if q.Limit > 0 && len(p.Holds) > q.Limit {
			t.Fatalf("holds %+v: a page of %d", q, len(p.Holds))
		}
		out = append(out, p.Holds...)
		if p.Next == "" {
			return out
		}
		if len(p.Holds) == 0 {
			t.Fatalf("holds %+v: an empty page with a next cursor", q)
		}
		q.After = p.Next
	}
}

func checkoutIDs(hs []holdfast.Hold) []uuid.UUID {
	out := make([]uuid.UUID, len(hs))
	for i, h := range hs {
		out[i] = h.CheckoutID
	}
	return out
}

// testListings runs the listing tests.
func testListings(t *testing.T, h *Harness) {
	t.Parallel()
	t.Run("Filters", func(t *testing.T) { testListing(t, h) })
	t.Run("BadArguments", func(t *testing.T) { testListingBadArguments(t, h) })
	t.Run("UnderWrites", func(t *testing.T) { testListingUnderWrites(t, h) })
}

// sameListedHold reports whether a and b are the same hold in the same state.
func sameListedHold(a, b holdfast.Hold) bool {
	ended := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().String()
	}
	return a.CheckoutID == b.CheckoutID && a.ShopID == b.ShopID && a.Status == b.Status && a.Claimable == b.Claimable &&
		fmt.Sprint(a.Lines) == fmt.Sprint(b.Lines) && a.CreatedAt.Equal(b.CreatedAt) && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.Deadline.Equal(b.Deadline) && ended(a.EndedAt) == ended(b.EndedAt)
}

// testListing: Holds lists a shop's holds newest first with their status as
// Hold reports it, filters by item, location and status, pages without
// repeating or skipping; Ledger lists a key's changes newest first; Keys
// ranks by held units.
func testListing(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	k1, k2, other := key(1, 1), holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 3}, key(2, 1)
	e.stock(k1, 100)
	e.stock(k2, 100)
	e.stock(other, 100)
	// Created one second apart, oldest first.
	var ids []uuid.UUID
	reserve := func(lines []holdfast.Line, ttl time.Duration) uuid.UUID {
		e.Clock.Advance(time.Second)
		id := e.mustReserve(1, lines, ttl)
		ids = append(ids, id)
		return id
	}
	claimed := reserve(one(1, 2), 0)
	released := reserve([]holdfast.Line{{ItemID: 2, LocationID: 3, Quantity: 1}}, 0)
	cart := reserve([]holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 3, Quantity: 4}}, 0)
	lapsed := reserve(one(1, 1), time.Minute)
	held := reserve(one(1, 3), 0)
	e.Clock.Advance(time.Second)
	e.mustReserve(2, one(1, 1), 0) // another shop: never listed for shop 1
	if _, err := e.e.Claim(ctx, 1, claimed); err != nil {
		t.Fatal(err)
	}
	if _, err := e.e.Release(ctx, 1, released); err != nil {
		t.Fatal(err)
	}
	// lapsed passes its expiry (one minute), unswept; the others
	// (default TTL) stay held.
	e.Clock.Advance(2 * time.Minute)

	newest := []uuid.UUID{held, lapsed, cart, released, claimed}
	for _, limit := range []int{0, 1, 2, 5, holdfast.ListLimitMax} {
		got := checkoutIDs(allHolds(t, e.e, holdfast.HoldQuery{ShopID: 1, Limit: limit}))
		if fmt.Sprint(got) != fmt.Sprint(newest) {
			t.Errorf("limit %d: listed %v, want newest first %v", limit, got, newest)
		}
	}
	all, err := e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if all.Next != "" {
		t.Errorf("a complete first page has next %q", all.Next)
	}
	for _, got := range all.Holds {
		if want := e.hold(1, got.CheckoutID); !sameListedHold(got, *want) {
			t.Errorf("listed %+v, Hold reads %+v", got, *want)
		}
	}
	filters := []struct {
		q    holdfast.HoldQuery
		want []uuid.UUID
	}{
		{holdfast.HoldQuery{ShopID: 1, ItemID: 1}, []uuid.UUID{held, lapsed, cart, claimed}},
		{holdfast.HoldQuery{ShopID: 1, ItemID: 2}, []uuid.UUID{cart, released}},
		{holdfast.HoldQuery{ShopID: 1, LocationID: 3}, []uuid.UUID{cart, released}},
		{holdfast.HoldQuery{ShopID: 1, ItemID: 2, LocationID: 3}, []uuid.UUID{cart, released}},
		{holdfast.HoldQuery{ShopID: 1, ItemID: 2, LocationID: 1}, nil},
		{holdfast.HoldQuery{ShopID: 1, ItemID: 9}, nil},
		{holdfast.HoldQuery{ShopID: 1, Status: holdfast.StatusHeld}, []uuid.UUID{held, cart}},
		{holdfast.HoldQuery{ShopID: 1, Status: holdfast.StatusExpired}, []uuid.UUID{lapsed}},
		{holdfast.HoldQuery{ShopID: 1, Status: holdfast.StatusClaimed}, []uuid.UUID{claimed}},
		{holdfast.HoldQuery{ShopID: 1, Status: holdfast.StatusReleased, ItemID: 2}, []uuid.UUID{released}},
		{holdfast.HoldQuery{ShopID: 1, Status: holdfast.StatusHeld, ItemID: 1, Limit: 1}, []uuid.UUID{held, cart}},
		{holdfast.HoldQuery{ShopID: 3}, nil},
	}
	for _, f := range filters {
		got := checkoutIDs(allHolds(t, e.e, f.q))
		if fmt.Sprint(got) != fmt.Sprint(f.want) && !(len(got) == 0 && len(f.want) == 0) {
			t.Errorf("%+v: listed %v, want %v", f.q, got, f.want)
		}
	}
	lh := allHolds(t, e.e, holdfast.HoldQuery{ShopID: 1, Status: holdfast.StatusExpired})
	if len(lh) != 1 || !lh[0].Claimable {
		t.Errorf("the lapsed hold listed as %+v, want expired and claimable", lh)
	}

	// The ledger: the stocktake, then the claim of 2 (and the cart's
	// units are still held: no entry).
	if _, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k1, Delta: 5, Reason: "restock", Reference: "po-1"}); err != nil {
		t.Fatal(err)
	}
	var entries []holdfast.LedgerEntry
	q := holdfast.LedgerQuery{Key: k1, Limit: 1}
	for {
		p, err := e.e.Ledger(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) > 1 || p.Key != k1 {
			t.Fatalf("ledger page %+v", p)
		}
		entries = append(entries, p.Entries...)
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	if len(entries) != 3 {
		t.Fatalf("ledger of %+v: %+v, want 3 entries", k1, entries)
	}
	if got := []int{entries[0].Delta, entries[1].Delta, entries[2].Delta}; fmt.Sprint(got) != "[5 -2 100]" {
		t.Errorf("ledger deltas newest first %v, want [5 -2 100]", got)
	}
	if got := []int{entries[0].AvailableAfter, entries[1].AvailableAfter, entries[2].AvailableAfter}; fmt.Sprint(got) != "[103 98 100]" {
		t.Errorf("ledger available_after newest first %v, want [103 98 100]", got)
	}
	if entries[0].Reason != "restock" || entries[0].Reference != "po-1" || entries[2].Reason != "test stock" {
		t.Errorf("ledger reasons %+v", entries)
	}
	if !(entries[0].ID > entries[1].ID && entries[1].ID > entries[2].ID) {
		t.Errorf("ledger ids not descending: %+v", entries)
	}
	if p, err := e.e.Ledger(ctx, holdfast.LedgerQuery{Key: key(1, 77)}); err != nil || len(p.Entries) != 0 || p.Next != "" {
		t.Errorf("ledger of a key never stocked: %+v, %v", p, err)
	}

	// Keys: k1 holds 1+1+3 = 5 units (the lapsed hold's still count), k2 4.
	keys, err := e.e.Keys(ctx, holdfast.KeyQuery{ShopID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].Key != k1 || keys[1].Key != k2 || keys[0].Held != 5 || keys[1].Held != 4 {
		t.Errorf("keys by activity: %+v, want %v (held 5) then %v (held 4)", keys, k1, k2)
	}
	for _, l := range keys {
		if want := e.level(l.Key); fmt.Sprint(*want) != fmt.Sprint(l) {
			t.Errorf("Keys answered %+v, Level reads %+v", l, *want)
		}
	}
	if keys, err := e.e.Keys(ctx, holdfast.KeyQuery{ShopID: 1, Limit: 1}); err != nil || len(keys) != 1 || keys[0].Key != k1 {
		t.Errorf("one key by activity: %+v, %v", keys, err)
	}
	if _, err := e.e.Release(ctx, 1, held); err != nil {
		t.Fatal(err)
	}
	if keys, err := e.e.Keys(ctx, holdfast.KeyQuery{ShopID: 1, Limit: 1}); err != nil || len(keys) != 1 || keys[0].Key != k2 {
		t.Errorf("after k1 dropped to 2 held units, the first key by activity: %+v, %v; want %v", keys, err, k2)
	}
}

// testListingBadArguments: every malformed listing is an *ArgumentError
// naming the field, and writes nothing.
func testListingBadArguments(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	k := key(1, 1)
	e.stock(k, 10)
	e.mustReserve(1, one(1, 2), 0)
	ledgerNext := func() string {
		e.stock(k, 11)
		p, err := e.e.Ledger(ctx, holdfast.LedgerQuery{Key: k, Limit: 1})
		if err != nil || p.Next == "" {
			t.Fatalf("ledger page: %+v, %v", p, err)
		}
		return p.Next
	}()
	holdNext := func() string {
		e.mustReserve(1, one(1, 1), 0)
		p, err := e.e.Holds(ctx, holdfast.HoldQuery{ShopID: 1, Limit: 1})
		if err != nil || p.Next == "" {
			t.Fatalf("holds page: %+v, %v", p, err)
		}
		return p.Next
	}()
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
	before := rows()
	holds := func(q holdfast.HoldQuery) func() error {
		return func() error { _, err := e.e.Holds(ctx, q); return err }
	}
	ledger := func(q holdfast.LedgerQuery) func() error {
		return func() error { _, err := e.e.Ledger(ctx, q); return err }
	}
	keys := func(q holdfast.KeyQuery) func() error {
		return func() error { _, err := e.e.Keys(ctx, q); return err }
	}
	cases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"holds zero shop", holds(holdfast.HoldQuery{}), "shop_id"},
		{"holds negative shop", holds(holdfast.HoldQuery{ShopID: -1}), "shop_id"},
		{"holds negative item", holds(holdfast.HoldQuery{ShopID: 1, ItemID: -1}), "item_id"},
		{"holds negative location", holds(holdfast.HoldQuery{ShopID: 1, LocationID: -2}), "location_id"},
		{"holds unknown status", holds(holdfast.HoldQuery{ShopID: 1, Status: "pending"}), "status"},
		{"holds negative limit", holds(holdfast.HoldQuery{ShopID: 1, Limit: -1}), "limit"},
		{"holds limit above the maximum", holds(holdfast.HoldQuery{ShopID: 1, Limit: holdfast.ListLimitMax + 1}), "limit"},
		{"holds garbage cursor", holds(holdfast.HoldQuery{ShopID: 1, After: "garbage"}), "cursor"},
		{"holds truncated cursor", holds(holdfast.HoldQuery{ShopID: 1, After: holdNext[:len(holdNext)-2]}), "cursor"},
		{"holds with a ledger cursor", holds(holdfast.HoldQuery{ShopID: 1, After: ledgerNext}), "cursor"},
		{"ledger zero shop", ledger(holdfast.LedgerQuery{Key: holdfast.Key{ItemID: 1, LocationID: 1}}), "shop_id"},
		{"ledger zero item", ledger(holdfast.LedgerQuery{Key: holdfast.Key{ShopID: 1, LocationID: 1}}), "item_id"},
		{"ledger zero location", ledger(holdfast.LedgerQuery{Key: holdfast.Key{ShopID: 1, ItemID: 1}}), "location_id"},
		{"ledger limit above the maximum", ledger(holdfast.LedgerQuery{Key: k, Limit: holdfast.ListLimitMax + 1}), "limit"},
		{"ledger negative limit", ledger(holdfast.LedgerQuery{Key: k, Limit: -5}), "limit"},
		{"ledger with a holds cursor", ledger(holdfast.LedgerQuery{Key: k, After: holdNext}), "cursor"},
		{"ledger garbage cursor", ledger(holdfast.LedgerQuery{Key: k, After: "l1.!!"}), "cursor"},
		{"ledger zero cursor", ledger(holdfast.LedgerQuery{Key: k, After: holdfast.LedgerCursor{ID: 0}.Encode()}), "cursor"},
		{"keys zero shop", keys(holdfast.KeyQuery{}), "shop_id"},
		{"keys limit above the maximum", keys(holdfast.KeyQuery{ShopID: 1, Limit: holdfast.KeysLimitMax + 1}), "limit"},
	}
	for _, tc := range cases {
		err := tc.call()
		var ae *holdfast.ArgumentError
		if !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("%s: got %v, want an *ArgumentError for %s", tc.name, err, tc.field)
		}
	}
	if after := rows(); !maps.Equal(before, after) {
		t.Errorf("rejected listings wrote rows: %v before, %v after", before, after)
	}
}

// testListingUnderWrites: paging through a shop's holds and a key's ledger
// while other callers reserve, claim, release and change stock lists no
// hold or entry twice and skips none that existed before the first page.
func testListingUnderWrites(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	k := key(1, 1)
	e.stock(k, 1_000_000)
	n := 60
	if long() {
		n = 600
	}
	before := map[uuid.UUID]bool{}
	var open []uuid.UUID
	for i := range n {
		if i%10 == 0 {
			e.Clock.Advance(time.Second) // some ties, some distinct times
		}
		id := e.mustReserve(1, one(1, 1), 0)
		before[id] = true
		open = append(open, id)
		e.stock(k, 1_000_000+i) // one ledger entry each
	}
	firstLedger, err := e.e.Ledger(ctx, holdfast.LedgerQuery{Key: k, Limit: holdfast.ListLimitMax})
	if err != nil {
		t.Fatal(err)
	}
	ledgerBefore := map[int64]bool{}
	for _, en := range firstLedger.Entries {
		ledgerBefore[en.ID] = true
	}

	// Writers run while the pages are read, and between every two pages
	// one more batch of writes lands for sure.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	var mu sync.Mutex
	write := func(i int) {
		var err error
		switch i % 4 {
		case 0:
			_, err = e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 1)})
		case 1:
			mu.Lock()
			var id uuid.UUID
			if len(open) > 0 {
				id, open = open[0], open[1:]
			}
			mu.Unlock()
			if id != uuid.Nil {
				_, err = e.e.Claim(ctx, 1, id)
			}
		case 2:
			mu.Lock()
			var id uuid.UUID
			if len(open) > 0 {
				id, open = open[len(open)-1], open[:len(open)-1]
			}
			mu.Unlock()
			if id != uuid.Nil {
				_, err = e.e.Release(ctx, 1, id)
			}
		case 3:
			_, err = e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 1, Reason: "restock"})
		}
		if err != nil {
			mu.Lock()
			writeErr = errors.Join(writeErr, err)
			mu.Unlock()
		}
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 400; i += 2 { // bounded
				select {
				case <-stop:
					return
				default:
				}
				write(i)
			}
		}()
	}

	seen := map[uuid.UUID]int{}
	q := holdfast.HoldQuery{ShopID: 1, Limit: 7}
	for pages := 0; ; pages++ {
		p, err := e.e.Holds(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, hd := range p.Holds {
			seen[hd.CheckoutID]++
		}
		for i := range 4 {
			write(pages*4 + i)
		}
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	seenLedger := map[int64]int{}
	lq := holdfast.LedgerQuery{Key: k, Limit: 9}
	for pages := 0; ; pages++ {
		p, err := e.e.Ledger(ctx, lq)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range p.Entries {
			seenLedger[en.ID]++
		}
		for i := range 4 {
			write(pages*4 + i)
		}
		if p.Next == "" {
			break
		}
		lq.After = p.Next
	}
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("concurrent writes: %v", writeErr)
	}
	for id, c := range seen {
		if c > 1 {
			t.Errorf("hold %s listed %d times", id, c)
		}
	}
	for id := range before {
		if seen[id] == 0 {
			t.Errorf("hold %s existed before the first page and was never listed", id)
		}
	}
	for id, c := range seenLedger {
		if c > 1 {
			t.Errorf("ledger entry %d listed %d times", id, c)
		}
	}
	for id := range ledgerBefore {
		if seenLedger[id] == 0 {
			t.Errorf("ledger entry %d existed before the first page and was never listed", id)
		}
	}
	if len(seen) < n || len(seenLedger) < len(ledgerBefore) {
		t.Errorf("listed %d holds (%d before) and %d entries (%d before)", len(seen), n, len(seenLedger), len(ledgerBefore))
	}
}
