package enginetest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Fair drops (issue #30 item 7): reservations in a key's drop window enter
// a lottery (one entry per buyer) and wait; the draw at the window's end
// queues them in the order HMAC-SHA256(seed, ticket) gives, and the
// waitlist serves them in that order; after the window the key is first
// come first served behind them.

func testDrops(t *testing.T, h *Harness) {
	t.Parallel()
	t.Run("Lottery", func(t *testing.T) { testDropLottery(t, h) })
	t.Run("RetriesAndEntrantsRace", func(t *testing.T) { testDropRetriesRace(t, h) })
	t.Run("DrawOnceUnderRaces", func(t *testing.T) { testDropDrawOnce(t, h) })
	t.Run("AfterWindowFirstComeFirstServed", func(t *testing.T) { testDropAfterWindow(t, h) })
	t.Run("BadInputChangesNothing", func(t *testing.T) { testDropBadInput(t, h) })
}

// enter reserves a unit of item for id as buyer (in a drop window: an
// entry, which waits DropWaitDefault once drawn).
func (e *env) enter(shop, item int64, id uuid.UUID, buyer string) error {
	_, err := e.e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: one(item, 1), BuyerID: buyer})
	return err
}

func (e *env) drop(k holdfast.Key) *holdfast.Drop {
	e.t.Helper()
	d, err := e.e.Drop(ctxb(), k)
	if err != nil {
		e.t.Fatalf("drop of %+v: %v", k, err)
	}
	return d
}

// checkDrawn checks a drawn drop as an outsider would: VerifyDrop, and the
// ranks recomputed here from the revealed seed.
func checkDrawn(t *testing.T, d *holdfast.Drop, entrants int) {
	t.Helper()
	if d.State != holdfast.DropDrawn || d.Seed == "" || len(d.Entrants) != entrants || d.Entries != entrants {
		t.Fatalf("drawn drop: %+v, want %d entrants", d, entrants)
	}
	if err := holdfast.VerifyDrop(d); err != nil {
		t.Fatalf("VerifyDrop: %v (%+v)", err, d)
	}
	seed, _ := hex.DecodeString(d.Seed)
	tickets := make([]string, len(d.Entrants))
	for i, en := range d.Entrants {
		tickets[i] = en.Ticket
	}
	for pos, i := range holdfast.DropOrder(seed, tickets) {
		if d.Entrants[i].Rank != pos+1 || i != pos {
			t.Fatalf("entrant %d (rank %d) is %d in the recomputed order; entrants must be listed by rank", i, d.Entrants[i].Rank, pos+1)
		}
	}
}

func testDropLottery(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s, Slots: 4, PoolCap: 7}, Options{Conns: 24})
		k := key(1, 7)
		e.stock(k, 3)
		start := e.Clock.Now().Add(time.Minute)
		d, err := e.e.SetDrop(ctxb(), holdfast.DropParams{Key: k, StartsAt: start, Window: 10 * time.Second})
		if err != nil {
			t.Fatalf("SetDrop: %v", err)
		}
		if d.State != holdfast.DropOpen || d.Seed != "" || len(d.Commitment) != 64 || !d.StartsAt.Equal(start) {
			t.Fatalf("set drop: %+v", d)
		}
		if l := e.level(k); l.Sellable != 0 || l.Pooled != 0 {
			t.Fatalf("level with an open drop: %+v, want nothing sellable or buffered", l)
		}
		// Before the window: refused, nothing entered.
		early := uuid.New()
		var dn *holdfast.DropNotOpenError
		if err := e.enter(1, 7, early, "early"); !errors.As(err, &dn) || !dn.StartsAt.Equal(start) {
			t.Fatalf("reserve before the window: %v, want *DropNotOpenError at %v", err, start)
		}
		if _, err := e.e.Hold(ctxb(), 1, early); !errors.Is(err, holdfast.ErrNotFound) {
			t.Fatalf("refused early checkout reads %v, want ErrNotFound", err)
		}
		e.Clock.Advance(time.Minute)
		// In the window: ten buyers at once; each entry waits.
		const n = 10
		ids := make([]uuid.UUID, n)
		var bad errorSink
		var wg sync.WaitGroup
		for i := range ids {
			ids[i] = uuid.New()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := e.enter(1, 7, ids[i], fmt.Sprintf("buyer-%d", i)); !errors.Is(err, holdfast.ErrWaitlisted) {
					bad.add("entrant %d: %v, want ErrWaitlisted", i, err)
				}
			}()
		}
		wg.Wait()
		bad.check(t)
		for i, id := range ids {
			// A retry answers the same entry; the read says it waits.
			if err := e.enter(1, 7, id, fmt.Sprintf("buyer-%d", i)); !errors.Is(err, holdfast.ErrWaitlisted) {
				t.Fatalf("retry of entrant %d: %v", i, err)
			}
			var we *holdfast.WaitlistedError
			if _, err := e.e.Hold(ctxb(), 1, id); !errors.As(err, &we) || we.Position != 0 {
				t.Fatalf("entrant %d reads %v, want ErrWaitlisted at position 0 (no place before the draw)", i, err)
			}
		}
		if err := e.enter(1, 7, uuid.New(), "buyer-3"); !errors.Is(err, holdfast.ErrDropEntered) {
			t.Fatalf("second checkout of a buyer: %v, want ErrDropEntered", err)
		}
		var ae *holdfast.ArgumentError
		if err := e.enter(1, 7, uuid.New(), ""); !errors.As(err, &ae) || ae.Field != "buyer_id" {
			t.Fatalf("entry without a buyer id: %v, want ArgumentError buyer_id", err)
		}
		if got := e.drop(k); got.Entries != n || got.Seed != "" || len(got.Entrants) != 0 {
			t.Fatalf("open drop: %+v, want %d entries and no seed", got, n)
		}
		// Nothing is served before the window ends.
		e.serve()
		for i, id := range ids {
			if _, err := e.e.Hold(ctxb(), 1, id); !errors.Is(err, holdfast.ErrWaitlisted) {
				t.Fatalf("entrant %d before the draw: %v", i, err)
			}
		}
		// The window ends: one pass draws and serves.
		e.Clock.Advance(10 * time.Second)
		e.serve()
		d = e.drop(k)
		checkDrawn(t, d, n)
		if holdfast.DropCommitment(must(hex.DecodeString(d.Seed))) != d.Commitment {
			t.Fatal("revealed seed does not match the commitment")
		}
		byRank := make([]uuid.UUID, n)
		for _, en := range d.Entrants {
			byRank[en.Rank-1] = en.CheckoutID
		}
		for r, id := range byRank {
			want := "waiting"
			if r < 3 {
				want = "held"
			}
			if got := e.waitState(1, id); got != want && !(want == "waiting" && len(got) > 8 && got[:8] == "waiting:") {
				t.Fatalf("rank %d: %s, want %s", r+1, got, want)
			}
		}
		// After the window: a new buyer is behind the entrants.
		if _, err := e.reserve(1, uuid.New(), one(7, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
			t.Fatalf("new buyer after the draw: %v, want ErrInsufficientStock", err)
		}
		// A winner gives back: the next in lottery order gets it.
		if _, err := e.e.Release(ctxb(), 1, byRank[0]); err != nil {
			t.Fatalf("release rank 1: %v", err)
		}
		e.serve()
		if got := e.waitState(1, byRank[3]); got != "held" {
			t.Fatalf("rank 4 after rank 1 released: %s, want held", got)
		}
		if got := e.waitState(1, byRank[4]); got[:min(len(got), 7)] != "waiting" {
			t.Fatalf("rank 5 after rank 1 released: %s, want waiting", got)
		}
		// The rest end truthfully: their waits run out.
		e.Clock.Advance(holdfast.DropWaitDefault + time.Minute)
		e.serve()
		for r := 4; r < n; r++ {
			if got := e.waitState(1, byRank[r]); got != "expired" {
				t.Fatalf("rank %d after its wait: %s, want expired", r+1, got)
			}
		}
		page, err := e.e.Audit(ctxb(), holdfast.AuditQuery{ShopID: 1, Action: holdfast.AuditDropDraw})
		if err != nil || len(page.Entries) != 1 {
			t.Fatalf("audit of the draw: %+v %v, want one entry", page, err)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// testDropRetriesRace: the lottery against retries. Many buyers enter at
// once, each retrying its reservation from several goroutines, and each
// also trying a second checkout: one entry per buyer, every retry answered
// with the entry, every second checkout refused.
func testDropRetriesRace(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{}, Options{Conns: 32})
	k := key(2, 9)
	e.stock(k, 5)
	if _, err := e.e.SetDrop(ctxb(), holdfast.DropParams{Key: k, Window: time.Minute}); err != nil {
		t.Fatalf("SetDrop: %v", err)
	}
	const buyers, tries = 12, 4
	// Two checkouts per buyer, each retried from several goroutines at
	// once: one of them enters, and every try of it answers the entry;
	// every try of the other is refused.
	ids := make([][2]uuid.UUID, buyers)
	for i := range ids {
		ids[i] = [2]uuid.UUID{uuid.New(), uuid.New()}
	}
	var mu sync.Mutex
	answers := map[uuid.UUID][]error{}
	var wg sync.WaitGroup
	for i := range buyers {
		for range tries {
			for _, id := range ids[i] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := e.enter(2, 9, id, fmt.Sprintf("b%d", i))
					mu.Lock()
					answers[id] = append(answers[id], err)
					mu.Unlock()
				}()
			}
		}
	}
	wg.Wait()
	entered := map[uuid.UUID]bool{}
	for i := range buyers {
		var in []uuid.UUID
		for _, id := range ids[i] {
			all := func(target error) bool {
				for _, err := range answers[id] {
					if !errors.Is(err, target) {
						return false
					}
				}
				return true
			}
			switch {
			case all(holdfast.ErrWaitlisted):
				in = append(in, id)
				entered[id] = true
			case all(holdfast.ErrDropEntered):
			default:
				t.Fatalf("buyer %d, checkout %s: answers %v: all the entry's or all refused", i, id, answers[id])
			}
		}
		if len(in) != 1 {
			t.Fatalf("buyer %d entered with %d checkouts, want 1 (answers %v / %v)", i, len(in), answers[ids[i][0]], answers[ids[i][1]])
		}
	}
	if d := e.drop(k); d.Entries != buyers {
		t.Fatalf("entries after the race: %d, want %d (one per buyer)", d.Entries, buyers)
	}
	e.Clock.Advance(time.Minute)
	e.serve()
	d := e.drop(k)
	checkDrawn(t, d, buyers)
	held := 0
	for _, en := range d.Entrants {
		if !entered[en.CheckoutID] {
			t.Fatalf("entrant %s is no checkout that was answered the entry", en.CheckoutID)
		}
		if e.waitState(2, en.CheckoutID) == "held" {
			held++
			if en.Rank > 5 {
				t.Fatalf("rank %d held before a better rank", en.Rank)
			}
		}
	}
	if held != 5 {
		t.Fatalf("%d entrants held, want 5 (the stock)", held)
	}
}

// testDropDrawOnce: many processes' worth of draws at once — waitlist
// passes and reservations arriving after the window — draw once.
func testDropDrawOnce(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{}, Options{Conns: 32})
	k := key(3, 4)
	e.stock(k, 2)
	if _, err := e.e.SetDrop(ctxb(), holdfast.DropParams{Key: k, Window: time.Second}); err != nil {
		t.Fatalf("SetDrop: %v", err)
	}
	ids := make([]uuid.UUID, 6)
	for i := range ids {
		ids[i] = uuid.New()
		if err := e.enter(3, 4, ids[i], fmt.Sprintf("d%d", i)); !errors.Is(err, holdfast.ErrWaitlisted) {
			t.Fatalf("entrant %d: %v", i, err)
		}
	}
	e.Clock.Advance(2 * time.Second)
	var bad errorSink
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := e.e.ServeWaitlist(ctxb()); err != nil {
				bad.add("serve %d: %v", i, err)
			}
		}()
		go func() {
			defer wg.Done()
			// After the window, behind the entrants: short.
			if _, err := e.reserve(3, uuid.New(), one(4, 1)); err != nil && !errors.Is(err, holdfast.ErrInsufficientStock) {
				bad.add("late reserve %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	bad.check(t)
	e.serve()
	d := e.drop(k)
	checkDrawn(t, d, len(ids))
	page, err := e.e.Audit(ctxb(), holdfast.AuditQuery{ShopID: 3, Action: holdfast.AuditDropDraw})
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("draws recorded: %+v %v, want exactly one", page, err)
	}
	for _, en := range d.Entrants {
		want := "waiting"
		if en.Rank <= 2 {
			want = "held"
		}
		if got := e.waitState(3, en.CheckoutID); got[:min(len(got), len(want))] != want {
			t.Fatalf("rank %d: %s, want %s", en.Rank, got, want)
		}
	}
}

// testDropAfterWindow: with nobody entered, the first reservation after the
// window draws (no worker ran) and is served first come first served.
func testDropAfterWindow(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{}, Options{})
	k := key(4, 2)
	e.stock(k, 2)
	if _, err := e.e.SetDrop(ctxb(), holdfast.DropParams{Key: k, Window: 2 * time.Second}); err != nil {
		t.Fatalf("SetDrop: %v", err)
	}
	e.Clock.Advance(3 * time.Second)
	e.mustReserve(4, one(2, 1), time.Minute)
	e.mustReserve(4, one(2, 1), time.Minute)
	if _, err := e.reserve(4, uuid.New(), one(2, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
		t.Fatalf("third unit of two: %v", err)
	}
	checkDrawn(t, e.drop(k), 0)
	// A drawn drop may be set again: a new seed, a new window.
	d, err := e.e.SetDrop(ctxb(), holdfast.DropParams{Key: k, Window: time.Minute})
	if err != nil || d.State != holdfast.DropOpen || d.Entries != 0 {
		t.Fatalf("drop set again: %+v %v", d, err)
	}
	// One whose window has begun is not replaced.
	if _, err := e.e.SetDrop(ctxb(), holdfast.DropParams{Key: k, Window: time.Hour}); !errors.Is(err, holdfast.ErrDropStarted) {
		t.Fatalf("SetDrop in the window: %v, want ErrDropStarted", err)
	}
}

func testDropBadInput(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{}, Options{})
	k := key(5, 3)
	e.stock(k, 2)
	now := e.Clock.Now()
	before := e.rows()
	for _, c := range []struct {
		p     holdfast.DropParams
		field string
	}{
		{holdfast.DropParams{Key: k}, "window"},
		{holdfast.DropParams{Key: k, Window: -time.Second}, "window"},
		{holdfast.DropParams{Key: k, Window: holdfast.DropWindowMin - 1}, "window"},
		{holdfast.DropParams{Key: k, Window: holdfast.DropWindowMax + time.Second}, "window"},
		{holdfast.DropParams{Key: k, Window: time.Minute, StartsAt: now.Add(-holdfast.DropPastMax - time.Second)}, "starts_at"},
		{holdfast.DropParams{Key: k, Window: time.Minute, StartsAt: now.Add(holdfast.DropLeadMax + time.Hour)}, "starts_at"},
		{holdfast.DropParams{Key: holdfast.Key{ShopID: 0, ItemID: 3, LocationID: 1}, Window: time.Minute}, "shop_id"},
	} {
		var ae *holdfast.ArgumentError
		if _, err := e.e.SetDrop(ctxb(), c.p); !errors.As(err, &ae) || ae.Field != c.field {
			t.Fatalf("SetDrop(%+v): %v, want ArgumentError %s", c.p, err, c.field)
		}
	}
	if before != nil {
		e.sameAllRows(before)
	}
	if _, err := e.e.Drop(ctxb(), k); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("drop after bad input: %v, want ErrNotFound", err)
	}
	e.assertSellable(k, 2)
}
