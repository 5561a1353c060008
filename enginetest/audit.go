package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Admin cancel and the audit log (issue #30 item 6).

// testAdminCancelAndAudit runs the suite's admin-cancel and audit tests,
// in parallel.
func testAdminCancelAndAudit(t *testing.T, h *Harness) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h *Harness)
	}{
		{"CancelByFilters", testCancelByFilters},
		{"CancelBadInput", testCancelBadInput},
		{"AuditStockChanges", testAuditStockChanges},
		{"AuditRetention", testAuditRetention},
		{"CancelRacesClaims", testCancelRacesClaims},
		{"CancelServesWaiters", testCancelServesWaiters},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

// cancel calls CancelHolds and fails the test on an error.
func (e *env) cancel(ctx context.Context, p holdfast.CancelParams) *holdfast.CancelResult {
	e.t.Helper()
	r, err := e.e.CancelHolds(ctx, p)
	if err != nil {
		e.t.Fatalf("cancel %+v: %v", p, err)
	}
	return r
}

// audit reads every entry of q, page by page (q.Limit a page), checking
// that ids only go down and none repeats.
func (e *env) audit(q holdfast.AuditQuery) []holdfast.AuditEntry {
	e.t.Helper()
	var out []holdfast.AuditEntry
	for {
		page, err := e.e.Audit(ctxb(), q)
		if err != nil {
			e.t.Fatalf("audit %+v: %v", q, err)
		}
		for _, en := range page.Entries {
			if len(out) > 0 && en.ID >= out[len(out)-1].ID {
				e.t.Fatalf("audit paging: id %d after %d (newest first, no repeats)", en.ID, out[len(out)-1].ID)
			}
			out = append(out, en)
		}
		if page.Next == "" {
			return out
		}
		q.After = page.Next
	}
}

func checkouts(r *holdfast.CancelResult) []uuid.UUID {
	var out []uuid.UUID
	for _, c := range r.Cancelled {
		out = append(out, c.CheckoutID)
	}
	return out
}

// testCancelByFilters: CancelHolds ends the held holds of an item, of a
// buyer, older than an age (each filter alone and together), bounded with
// a cursor to go on; the units go back; a released hold cannot be claimed;
// the release events are written; a repeated call ends nothing and is no
// error; every cancelled hold has an audit entry with the reason and who
// made it.
func testCancelByFilters(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	const shop = 1
	for item := int64(1); item <= 3; item++ {
		e.stock(key(shop, item), 10)
	}
	reserve := func(buyer string, l holdfast.Line) uuid.UUID {
		t.Helper()
		id := uuid.New()
		if _, err := e.e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: []holdfast.Line{l}, TTL: time.Hour, BuyerID: buyer}); err != nil {
			t.Fatalf("reserve: %v", err)
		}
		return id
	}
	a := reserve("alice", line(1, 2))
	e.Clock.Advance(time.Second)
	b := reserve("bob", line(1, 1))
	e.Clock.Advance(time.Second)
	c := reserve("alice", line(2, 3))
	f := reserve("", line(3, 1))
	e.Clock.Advance(10 * time.Minute)
	d := reserve("", line(2, 1))
	g := reserve("", line(3, 1))

	// Age and item: only f is on item 3 and older than 5 minutes.
	r := e.cancel(ctxb(), holdfast.CancelParams{ShopID: shop, ItemID: 3, OlderThan: 5 * time.Minute, Reason: "stuck cart"})
	if !slices.Equal(checkouts(r), []uuid.UUID{f}) || r.More || len(r.Units) != 1 || r.Units[0] != (holdfast.KeyUnits{Key: key(shop, 3), Units: 1}) {
		t.Fatalf("cancel item 3 older than 5m: %+v", r)
	}
	if l := e.level(key(shop, 3)); l.Held != 1 {
		t.Fatalf("item 3 after the cancel: %+v, want 1 held (g's)", l)
	}

	// Item 1, one hold a call: the newest (b) first, then a through the
	// cursor.
	ctxOps := holdfast.WithActor(ctxb(), holdfast.Actor{KeyID: 7, KeyName: "ops", Via: "http", Remote: "192.0.2.1:4000", RequestID: "req-1"})
	r = e.cancel(ctxOps, holdfast.CancelParams{ShopID: shop, ItemID: 1, Reason: "recall", Limit: 1})
	if !slices.Equal(checkouts(r), []uuid.UUID{b}) || !r.More || r.Next == "" {
		t.Fatalf("cancel item 1, limit 1: %+v, want b and more", r)
	}
	r = e.cancel(ctxOps, holdfast.CancelParams{ShopID: shop, ItemID: 1, Reason: "recall", Limit: 1, After: r.Next})
	if !slices.Equal(checkouts(r), []uuid.UUID{a}) || r.More || r.Next != "" {
		t.Fatalf("cancel item 1 after the cursor: %+v, want a and no more", r)
	}
	if l := e.level(key(shop, 1)); l.Held != 0 || l.Available != 10 {
		t.Fatalf("item 1 after the cancels: %+v, want its units back", l)
	}
	// Retrying is safe: nothing is left to end.
	if r = e.cancel(ctxOps, holdfast.CancelParams{ShopID: shop, ItemID: 1, Reason: "recall"}); len(r.Cancelled) != 0 || r.More {
		t.Fatalf("repeated cancel: %+v, want nothing ended", r)
	}
	// A cancelled hold is released: a claim is refused.
	if _, err := e.e.Claim(ctxb(), shop, b); !errors.Is(err, holdfast.ErrHoldReleased) {
		t.Fatalf("claim of a cancelled hold: %v, want ErrHoldReleased", err)
	}

	// Buyer: alice's remaining hold is c (a is gone); bob has none left.
	r = e.cancel(ctxb(), holdfast.CancelParams{ShopID: shop, BuyerID: "alice", Reason: "fraud"})
	if !slices.Equal(checkouts(r), []uuid.UUID{c}) || r.Units[0] != (holdfast.KeyUnits{Key: key(shop, 2), Units: 3}) {
		t.Fatalf("cancel alice's: %+v, want c with 3 units of item 2", r)
	}
	if r = e.cancel(ctxb(), holdfast.CancelParams{ShopID: shop, BuyerID: "bob", Reason: "fraud"}); len(r.Cancelled) != 0 {
		t.Fatalf("cancel bob's (already cancelled): %+v", r)
	}

	// Age alone: d and g are too young, until the clock moves.
	if r = e.cancel(ctxb(), holdfast.CancelParams{ShopID: shop, OlderThan: 5 * time.Minute, Reason: "old"}); len(r.Cancelled) != 0 {
		t.Fatalf("cancel older than 5m: %+v, want nothing (d and g are 0s old)", r)
	}
	e.Clock.Advance(6 * time.Minute)
	r = e.cancel(ctxb(), holdfast.CancelParams{ShopID: shop, OlderThan: 5 * time.Minute, Reason: "old"})
	if got := checkouts(r); len(got) != 2 || !slices.Contains(got, d) || !slices.Contains(got, g) {
		t.Fatalf("cancel older than 5m, 6m later: %+v, want d and g", r)
	}
	for item := int64(1); item <= 3; item++ {
		if l := e.level(key(shop, item)); l.Held != 0 || l.Available != 10 {
			t.Fatalf("item %d at the end: %+v, want 10 available, none held", item, l)
		}
	}

	// Each cancel is a release on the event feed.
	released := map[uuid.UUID]bool{}
	for _, ev := range e.events(shop, 0) {
		if ev.Type == holdfast.EventHoldReleased && ev.CheckoutID != nil {
			released[*ev.CheckoutID] = true
		}
	}
	for _, id := range []uuid.UUID{a, b, c, d, f, g} {
		if !released[id] {
			t.Errorf("no hold.released event for cancelled checkout %s", id)
		}
	}

	// The audit log: one hold.cancel entry per cancelled hold, with its
	// reason, checkout and who made it; the key's entries by key id.
	entries := e.audit(holdfast.AuditQuery{ShopID: shop, Action: holdfast.AuditHoldCancel, Limit: 2})
	if len(entries) != 6 {
		t.Fatalf("%d hold.cancel entries, want 6: %+v", len(entries), entries)
	}
	reasons := map[string]string{}
	for _, en := range entries {
		var dt struct {
			Reason     string `json:"reason"`
			CheckoutID string `json:"checkout_id"`
		}
		if err := json.Unmarshal(en.Detail, &dt); err != nil {
			t.Fatalf("entry %d detail %s: %v", en.ID, en.Detail, err)
		}
		reasons[dt.CheckoutID] = dt.Reason
		if en.ShopID != shop || en.Action != holdfast.AuditHoldCancel || en.CreatedAt.IsZero() {
			t.Errorf("entry %+v", en)
		}
	}
	want := map[string]string{a.String(): "recall", b.String(): "recall", c.String(): "fraud", d.String(): "old", f.String(): "stuck cart", g.String(): "old"}
	if !maps.Equal(reasons, want) {
		t.Fatalf("reasons %v, want %v", reasons, want)
	}
	byKey := e.audit(holdfast.AuditQuery{ShopID: shop, KeyID: 7})
	if len(byKey) != 2 {
		t.Fatalf("key 7's entries: %+v, want a's and b's cancels", byKey)
	}
	for _, en := range byKey {
		if en.KeyID != 7 || en.Actor != "ops" || en.Remote != "192.0.2.1:4000" || en.RequestID != "req-1" {
			t.Errorf("key 7's entry: %+v", en)
		}
	}
	if en := e.audit(holdfast.AuditQuery{ShopID: shop, Action: holdfast.AuditHoldCancel})[0]; en.Actor != "library" || en.KeyID != 0 {
		t.Errorf("an entry made without an actor: %+v, want actor library", en)
	}
	// Another shop's log is its own.
	if got := e.audit(holdfast.AuditQuery{ShopID: 2}); len(got) != 0 {
		t.Errorf("shop 2's log: %+v, want empty", got)
	}
}

// testCancelBadInput: a cancel without a reason or a filter, or with a bad
// limit, buyer, age or cursor, is an *ArgumentError naming the field and
// changes nothing; so is a bad audit query.
func testCancelBadInput(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	e.stock(key(1, 1), 5)
	e.stock(key(1, 2), 1)
	e.stock(key(1, 3), 1)
	id := e.mustReserve(1, []holdfast.Line{line(1, 2)}, time.Hour)
	rows := func() map[string]int {
		if e.Rows == nil {
			return nil
		}
		m, err := e.Rows(ctxb())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before, lvl := rows(), *e.level(key(1, 1))
	for _, tc := range []struct {
		name  string
		p     holdfast.CancelParams
		field string
	}{
		{"no reason", holdfast.CancelParams{ShopID: 1, ItemID: 1}, "reason"},
		{"blank reason", holdfast.CancelParams{ShopID: 1, ItemID: 1, Reason: "  "}, "reason"},
		{"no filter", holdfast.CancelParams{ShopID: 1, Reason: "x"}, "filter"},
		{"no shop", holdfast.CancelParams{ItemID: 1, Reason: "x"}, "shop_id"},
		{"negative item", holdfast.CancelParams{ShopID: 1, ItemID: -1, Reason: "x"}, "item_id"},
		{"negative age", holdfast.CancelParams{ShopID: 1, OlderThan: -time.Second, Reason: "x"}, "older_than"},
		{"limit too large", holdfast.CancelParams{ShopID: 1, ItemID: 1, Reason: "x", Limit: holdfast.CancelLimitMax + 1}, "limit"},
		{"bad buyer", holdfast.CancelParams{ShopID: 1, BuyerID: "a\x00b", Reason: "x"}, "buyer_id"},
		{"bad cursor", holdfast.CancelParams{ShopID: 1, ItemID: 1, Reason: "x", After: "nonsense"}, "cursor"},
	} {
		_, err := e.e.CancelHolds(ctxb(), tc.p)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("%s: %v, want an *ArgumentError for %s", tc.name, err, tc.field)
		}
	}
	for _, q := range []holdfast.AuditQuery{{ShopID: -1}, {ShopID: 1, Action: "Stock Set!"}, {ShopID: 1, Limit: holdfast.ListLimitMax + 1}, {ShopID: 1, KeyID: -2}} {
		if _, err := e.e.Audit(ctxb(), q); !errors.Is(err, holdfast.ErrInvalidArgument) {
			t.Errorf("audit %+v: %v, want an *ArgumentError", q, err)
		}
	}
	// A cursor of another audit listing is refused, not followed.
	page, err := e.e.Audit(ctxb(), holdfast.AuditQuery{ShopID: 1, Limit: 1})
	if err != nil || page.Next == "" {
		t.Fatalf("audit page: %+v %v", page, err)
	}
	if _, err := e.e.Audit(ctxb(), holdfast.AuditQuery{ShopID: 1, Action: holdfast.AuditStockSet, After: page.Next}); !errors.Is(err, holdfast.ErrInvalidCursor) {
		t.Errorf("another listing's cursor: %v, want ErrInvalidCursor", err)
	}
	if after := rows(); !maps.Equal(before, after) {
		t.Errorf("rejected calls wrote rows: %v, then %v", before, after)
	}
	if l := *e.level(key(1, 1)); l != lvl {
		t.Errorf("rejected cancels changed the level: %+v, then %+v", lvl, l)
	}
	if got := e.hold(1, id); got.Status != holdfast.StatusHeld {
		t.Errorf("rejected cancels ended the hold: %+v", got)
	}
}

// testAuditStockChanges: every stock change (set, adjust, safety,
// strategy) writes one audit entry with who, what and when (the
// database's clock: the injected one here); a replayed identified change
// writes none; paging lists every entry once, newest first.
func testAuditStockChanges(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := holdfast.WithActor(ctxb(), holdfast.Actor{Via: "cli"})
	k := key(1, 1)
	at := e.Clock.Now()
	n := 8
	if _, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "stocktake"}); err != nil {
		t.Fatal(err)
	}
	adj := holdfast.StockChange{Key: k, Delta: 3, Reason: "restock", Reference: "po-1", ID: "chg-1"}
	for range 2 { // the second is a replay
		if _, err := e.e.ChangeStock(ctx, adj); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.e.SetSafetyStock(ctx, k, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.e.SetStrategy(ctx, k, h.Strategies[len(h.Strategies)-1], 0); err != nil {
		t.Fatal(err)
	}
	all := e.audit(holdfast.AuditQuery{ShopID: 1, Limit: 1})
	var actions []string
	for _, en := range all {
		actions = append(actions, en.Action)
		if en.Actor != "cli" || en.KeyID != 0 || en.ShopID != 1 {
			t.Errorf("entry %+v, want actor cli", en)
		}
		if d := en.CreatedAt.Sub(at); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("entry %d at %v, want the database's (injected) now %v", en.ID, en.CreatedAt, at)
		}
	}
	want := []string{holdfast.AuditStockStrategy, holdfast.AuditStockSafety, holdfast.AuditStockAdjust, holdfast.AuditStockSet}
	if !slices.Equal(actions, want) {
		t.Fatalf("actions newest first %v, want %v", actions, want)
	}
	var d map[string]any
	if err := json.Unmarshal(all[2].Detail, &d); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%v %v %v %v %v", d["delta"], d["reason"], d["reference"], d["change_id"], d["available_after"]) != "3 restock po-1 chg-1 11" {
		t.Fatalf("adjust detail %s", all[2].Detail)
	}
	if got := e.audit(holdfast.AuditQuery{ShopID: 1, Action: holdfast.AuditStockAdjust}); len(got) != 1 || got[0].ID != all[2].ID {
		t.Fatalf("filtered by action: %+v", got)
	}
}

// testAuditRetention: the purge the maintenance workers run deletes the
// audit entries older than Config.AuditRetention, and only those.
func testAuditRetention(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0], AuditRetention: time.Hour}, Options{})
	p, ok := e.e.(interface {
		PurgeOnce(ctx context.Context) (int, error)
	})
	if !ok {
		t.Skip("the engine has no PurgeOnce")
	}
	e.stock(key(1, 1), 1)
	e.Clock.Advance(59 * time.Minute)
	e.stock(key(1, 2), 1)
	if _, err := p.PurgeOnce(ctxb()); err != nil {
		t.Fatal(err)
	}
	if got := e.audit(holdfast.AuditQuery{ShopID: 1}); len(got) != 2 {
		t.Fatalf("within the horizon: %d entries, want 2", len(got))
	}
	e.Clock.Advance(2 * time.Minute) // the first is 61 minutes old
	if _, err := p.PurgeOnce(ctxb()); err != nil {
		t.Fatal(err)
	}
	got := e.audit(holdfast.AuditQuery{ShopID: 1})
	if len(got) != 1 || string(got[0].Detail) == "" {
		t.Fatalf("after the horizon: %+v, want the second entry only", got)
	}
	var d map[string]any
	if err := json.Unmarshal(got[0].Detail, &d); err != nil || d["item_id"] != float64(2) {
		t.Fatalf("kept %s, want item 2's", got[0].Detail)
	}
}

// testCancelRacesClaims: admin cancels of an item race claims of its
// holds. Every hold ends either claimed or cancelled, never both: the
// claims that succeeded and the holds the cancels answered are disjoint
// and together every hold; the stock is what the claims took.
func testCancelRacesClaims(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: 30})
	const n = 40
	k := key(1, 1)
	e.stock(k, n)
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = e.mustReserve(1, []holdfast.Line{line(1, 1)}, time.Hour)
	}
	var mu sync.Mutex
	claimed, cancelled := map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	// Claims go from the oldest hold, cancels (newest first) from the
	// newest: they meet somewhere in between, racing for the same holds.
	var next atomic.Int64
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				id := ids[i]
				_, err := e.e.Claim(ctxb(), 1, id)
				switch {
				case err == nil:
					mu.Lock()
					claimed[id] = true
					mu.Unlock()
				case errors.Is(err, holdfast.ErrHoldReleased):
				default:
					t.Errorf("claim %s: %v", id, err)
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				r, err := e.e.CancelHolds(ctxb(), holdfast.CancelParams{ShopID: 1, ItemID: 1, Reason: "race", Limit: 2})
				if err != nil {
					t.Errorf("cancel: %v", err)
					return
				}
				mu.Lock()
				for _, c := range r.Cancelled {
					if cancelled[c.CheckoutID] {
						t.Errorf("checkout %s cancelled twice", c.CheckoutID)
					}
					cancelled[c.CheckoutID] = true
				}
				mu.Unlock()
				if len(r.Cancelled) == 0 && !r.More {
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, id := range ids {
		hd := e.hold(1, id)
		switch {
		case claimed[id] && cancelled[id]:
			t.Errorf("checkout %s both claimed and cancelled", id)
		case claimed[id] && hd.Status != holdfast.StatusClaimed, cancelled[id] && hd.Status != holdfast.StatusReleased:
			t.Errorf("checkout %s: claimed %v, cancelled %v, but %s", id, claimed[id], cancelled[id], hd.Status)
		case !claimed[id] && !cancelled[id]:
			t.Errorf("checkout %s neither claimed nor cancelled: %s", id, hd.Status)
		}
	}
	if l := e.level(k); l.Held != 0 || l.Available != n-len(claimed) {
		t.Errorf("level %+v after %d claims", l, len(claimed))
	}
	if got := e.audit(holdfast.AuditQuery{ShopID: 1, Action: holdfast.AuditHoldCancel}); len(got) != len(cancelled) {
		t.Errorf("%d hold.cancel entries for %d cancels", len(got), len(cancelled))
	}
	t.Logf("%d claimed, %d cancelled", len(claimed), len(cancelled))
}

// testCancelServesWaiters: units a cancel gives back go to the key's
// waiting carts first, as after a release; a new buyer does not get them.
func testCancelServesWaiters(t *testing.T, h *Harness) {
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	k := key(1, 1)
	e.stock(k, 2)
	held := e.mustReserve(1, []holdfast.Line{line(1, 2)}, time.Hour)
	waiter := uuid.New()
	e.mustWait(1, waiter, []holdfast.Line{line(1, 2)}, 10*time.Minute)
	r := e.cancel(ctxb(), holdfast.CancelParams{ShopID: 1, ItemID: 1, Reason: "release to the queue"})
	if !slices.Equal(checkouts(r), []uuid.UUID{held}) {
		t.Fatalf("cancel: %+v", r)
	}
	if _, err := e.reserve(1, uuid.New(), []holdfast.Line{line(1, 1)}); err == nil {
		t.Fatal("a new buyer took units a waiter was owed")
	}
	e.serve()
	if got := e.waitState(1, waiter); got != "held" {
		t.Fatalf("the waiter after the cancel and a serve: %s, want held", got)
	}
	if l := e.level(k); l.Held != 2 {
		t.Fatalf("level %+v, want the waiter's 2 held", l)
	}
}
