package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

func intp(n int) *int { return &n }

// changedErr fails unless err is a *StockChangedError for k expecting
// expected and reporting current, and returns it.
func changedErr(t *testing.T, what string, err error, k holdfast.Key, expected, current, index int) *holdfast.StockChangedError {
	t.Helper()
	var ce *holdfast.StockChangedError
	if !errors.Is(err, holdfast.ErrStockChanged) || !errors.As(err, &ce) {
		t.Fatalf("%s: %v, want a *StockChangedError", what, err)
	}
	if ce.Key != k || ce.Expected != expected || ce.Current != current || ce.Index != index {
		t.Fatalf("%s: %+v, want key %+v expected %d current %d index %d", what, ce, k, expected, current, index)
	}
	return ce
}

// testStockCAS: a compare-and-set stock change applies only when the key's
// available is what it expects (a key never stocked: 0); a mismatch answers
// *StockChangedError with the current value and changes nothing; an
// identified change answers its first outcome, a refusal included.
func testStockCAS(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{})
		ctx := ctxb()
		fresh, k := key(1, 1), key(1, 2)

		// A key never stocked: expecting anything but 0 is refused and
		// leaves it never stocked; expecting 0 matches.
		before := e.rows()
		_, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: fresh, Set: intp(5), Reason: "sync", ExpectAvailable: intp(3)})
		changedErr(t, "expect 3 of a key never stocked", err, fresh, 3, 0, -1)
		e.sameAllRows(before)
		if _, err := e.reserve(1, uuid.New(), one(1, 1)); !errors.Is(err, holdfast.ErrNotStocked) {
			t.Fatalf("reserve after a refused change of a key never stocked: %v, want ErrNotStocked", err)
		}
		if l, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: fresh, Set: intp(5), Reason: "sync", ExpectAvailable: intp(0)}); err != nil || l.Available != 5 {
			t.Fatalf("expect 0 of a key never stocked: %+v %v, want 5 available", l, err)
		}

		// Match applies (set and delta); the answer is the new level.
		e.stock(k, 10)
		e.mustReserve(1, one(2, 2), 0)
		l, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: intp(7), Reason: "sync", ExpectAvailable: intp(10)})
		if err != nil || l.Available != 7 || l.Held != 2 {
			t.Fatalf("matching set: %+v %v, want 7 available, 2 held", l, err)
		}
		l, err = e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 3, Reason: "restock", ExpectAvailable: intp(7)})
		if err != nil || l.Available != 10 {
			t.Fatalf("matching delta: %+v %v, want 10 available", l, err)
		}

		// Mismatch: refused with the current value, nothing written.
		before = e.rows()
		lvl := *e.level(k)
		_, err = e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: intp(50), Reason: "sync", ExpectAvailable: intp(7)})
		changedErr(t, "stale set", err, k, 7, 10, -1)
		_, err = e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: -1, Reason: "shrinkage", ExpectAvailable: intp(11)})
		changedErr(t, "stale delta", err, k, 11, 10, -1)
		e.sameAllRows(before)
		if got := *e.level(k); got != lvl {
			t.Fatalf("a refused change moved the level: %+v, then %+v", lvl, got)
		}

		// Identified: a refusal is the first outcome, answered again even
		// once the stock matches; the same id expecting another value is
		// another change.
		cas := holdfast.StockChange{Key: k, Set: intp(20), Reason: "sync", ID: "sync-1", ExpectAvailable: intp(12)}
		_, err = e.e.ChangeStock(ctx, cas)
		changedErr(t, "identified stale set", err, k, 12, 10, -1)
		e.stock(k, 12)
		_, err = e.e.ChangeStock(ctx, cas)
		changedErr(t, "identified stale set, retried after the stock matched", err, k, 12, 10, -1)
		if got := e.level(k); got.Available != 12 {
			t.Fatalf("a replayed refusal changed the stock: %+v", got)
		}
		other := cas
		other.ExpectAvailable = intp(13)
		if _, err := e.e.ChangeStock(ctx, other); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("same id, other expectation: %v, want ErrIdempotencyConflict", err)
		}
		other.ExpectAvailable = nil
		if _, err := e.e.ChangeStock(ctx, other); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("same id, no expectation: %v, want ErrIdempotencyConflict", err)
		}
		ok := holdfast.StockChange{Key: k, Set: intp(20), Reason: "sync", ID: "sync-2", ExpectAvailable: intp(12)}
		if l, err := e.e.ChangeStock(ctx, ok); err != nil || l.Available != 20 || l.Replayed {
			t.Fatalf("identified matching set: %+v %v, want 20 available", l, err)
		}
		e.stock(k, 12) // the expectation matches again: a retry must not apply twice
		if l, err := e.e.ChangeStock(ctx, ok); err != nil || l.Available != 20 || !l.Replayed {
			t.Fatalf("identified matching set, retried: %+v %v, want its first answer (20), Replayed", l, err)
		}
		if got := e.level(k); got.Available != 12 {
			t.Fatalf("a replayed compare-and-set applied again: %+v", got)
		}

		// Bad expectations are argument errors naming the field.
		before = e.rows()
		for _, bad := range []int{-1, holdfast.AvailableMax + 1} {
			_, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: intp(1), Reason: "sync", ExpectAvailable: intp(bad)})
			var ae *holdfast.ArgumentError
			if !errors.As(err, &ae) || ae.Field != "expected_available" {
				t.Fatalf("expect %d: %v, want an argument error on expected_available", bad, err)
			}
		}
		e.sameAllRows(before)
	})
}

// testStockImport: an import sets every entry's key in one transaction or
// none; a compare-and-set mismatch on any entry refuses all of it naming
// the entry; a retry answers the first outcome; it is bounded.
func testStockImport(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{})
	ctx := ctxb()
	k1, k2, k3 := key(1, 1), key(1, 2), key(1, 3)
	e.stock(k1, 10)
	e.stock(k2, 4)
	e.mustReserve(1, one(1, 3), 0)

	// Entries out of key order; k3 is new (expect 0 matches).
	im := holdfast.StockImport{ShopID: 1, ID: "feed-1", Reason: "nightly sync", Reference: "erp", Entries: []holdfast.StockImportEntry{
		{ItemID: 3, LocationID: 1, Available: 9, ExpectAvailable: intp(0)},
		{ItemID: 1, LocationID: 1, Available: 12, ExpectAvailable: intp(10)},
		{ItemID: 2, LocationID: 1, Available: 2},
	}}
	r, err := e.e.ImportStock(ctx, im)
	if err != nil || r.Replayed || len(r.Levels) != 3 {
		t.Fatalf("import: %+v %v", r, err)
	}
	for i, want := range []struct {
		k          holdfast.Key
		avail, hel int
	}{{k3, 9, 0}, {k1, 12, 3}, {k2, 2, 0}} {
		if got := r.Levels[i]; got.Key != want.k || got.Available != want.avail || got.Held != want.hel {
			t.Fatalf("import level %d: %+v, want %+v", i, got, want)
		}
		if got := e.level(want.k); got.Available != want.avail {
			t.Fatalf("after import, %+v: %+v", want.k, got)
		}
	}

	// A retry answers the first outcome and applies nothing, even where
	// the stock moved since.
	e.stock(k2, 5)
	again, err := e.e.ImportStock(ctx, im)
	if err != nil || !again.Replayed || fmt.Sprint(again.Levels) != fmt.Sprint(r.Levels) {
		t.Fatalf("retry: %+v %v, want the first answer %+v, Replayed", again, err, r)
	}
	if got := e.level(k2); got.Available != 5 {
		t.Fatalf("a retried import applied again: %+v", got)
	}
	// The same id with other entries, or more of them, is a conflict.
	changed := im
	changed.Entries = []holdfast.StockImportEntry{im.Entries[0], im.Entries[1], {ItemID: 2, LocationID: 1, Available: 3}}
	longer := im
	longer.Entries = append(append([]holdfast.StockImportEntry{}, im.Entries...), holdfast.StockImportEntry{ItemID: 4, LocationID: 1, Available: 1})
	for name, c := range map[string]holdfast.StockImport{"other entries": changed, "more entries": longer} {
		before := e.rows()
		if _, err := e.e.ImportStock(ctx, c); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("same id, %s: %v, want ErrIdempotencyConflict", name, err)
		}
		e.sameAllRows(before)
	}

	// All or nothing: the last entry's expectation is stale, so none of
	// the entries before it (applied in its transaction) stays.
	before := e.rows()
	levels := map[holdfast.Key]holdfast.Level{k1: *e.level(k1), k2: *e.level(k2), k3: *e.level(k3)}
	stale := holdfast.StockImport{ShopID: 1, ID: "feed-2", Reason: "nightly sync", Entries: []holdfast.StockImportEntry{
		{ItemID: 1, LocationID: 1, Available: 100, ExpectAvailable: intp(12)},
		{ItemID: 2, LocationID: 1, Available: 100},
		{ItemID: 3, LocationID: 1, Available: 100, ExpectAvailable: intp(8)},
	}}
	_, err = e.e.ImportStock(ctx, stale)
	changedErr(t, "import with a stale entry", err, k3, 8, 9, 2)
	e.sameAllRows(before)
	for k, want := range levels {
		if got := *e.level(k); got != want {
			t.Fatalf("a refused import moved %+v: %+v, then %+v", k, want, got)
		}
	}
	// A refused import recorded nothing: the same id, corrected, applies.
	stale.Entries[2].ExpectAvailable = intp(9)
	if r, err := e.e.ImportStock(ctx, stale); err != nil || r.Replayed || r.Levels[2].Available != 100 {
		t.Fatalf("corrected import under the refused one's id: %+v %v", r, err)
	}

	// Bounds and bad input: argument errors naming the field, nothing
	// written.
	many := make([]holdfast.StockImportEntry, holdfast.StockImportEntriesMax+1)
	for i := range many {
		many[i] = holdfast.StockImportEntry{ItemID: int64(i + 1), LocationID: 1, Available: 1}
	}
	before = e.rows()
	for _, c := range []struct {
		name  string
		im    holdfast.StockImport
		field string
	}{
		{"too many entries", holdfast.StockImport{ShopID: 1, ID: "x", Reason: "r", Entries: many}, "entries"},
		{"no entries", holdfast.StockImport{ShopID: 1, ID: "x", Reason: "r"}, "entries"},
		{"no id", holdfast.StockImport{ShopID: 1, Reason: "r", Entries: many[:1]}, "import_id"},
		{"no reason", holdfast.StockImport{ShopID: 1, ID: "x", Entries: many[:1]}, "reason"},
		{"duplicate key", holdfast.StockImport{ShopID: 1, ID: "x", Reason: "r", Entries: []holdfast.StockImportEntry{many[0], many[1], many[0]}}, "entries[2]"},
		{"negative available", holdfast.StockImport{ShopID: 1, ID: "x", Reason: "r", Entries: []holdfast.StockImportEntry{many[0], {ItemID: 9, LocationID: 1, Available: -1}}}, "entries[1].available"},
		{"bad expectation", holdfast.StockImport{ShopID: 1, ID: "x", Reason: "r", Entries: []holdfast.StockImportEntry{{ItemID: 9, LocationID: 1, ExpectAvailable: intp(-1)}}}, "entries[0].expected_available"},
		{"zero location", holdfast.StockImport{ShopID: 1, ID: "x", Reason: "r", Entries: []holdfast.StockImportEntry{{ItemID: 9}}}, "entries[0].location_id"},
	} {
		_, err := e.e.ImportStock(ctx, c.im)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != c.field {
			t.Fatalf("%s: %v, want an argument error on %s", c.name, err, c.field)
		}
	}
	e.sameAllRows(before)
	// The bound itself is accepted.
	if r, err := e.e.ImportStock(ctx, holdfast.StockImport{ShopID: 2, ID: "full", Reason: "r", Entries: many[:holdfast.StockImportEntriesMax]}); err != nil || len(r.Levels) != holdfast.StockImportEntriesMax {
		t.Fatalf("an import of %d entries: %v", holdfast.StockImportEntriesMax, err)
	}
}

// testStockCASRaces: compare-and-set stock syncs race reservations and
// claims on the same key. Every sync reads the level and sets available to
// what it read plus a delta, expecting what it read: a claim committed in
// between must refuse it (else the claim is lost, overwritten). At the end
// available = initial - claimed + the deltas of the syncs that applied, and
// each applied sync answered exactly expected + delta.
func testStockCASRaces(t *testing.T, h *Harness) {
	h.forEachStrategy(t, func(t *testing.T, s holdfast.Strategy) {
		e := h.newEnv(t, holdfast.Config{Strategy: s}, Options{Conns: 24})
		ctx := ctxb()
		k := key(1, 1)
		const initial, buyers, claimsEach, syncers, syncsEach = 300, 6, 15, 4, 25
		e.stock(k, initial)
		var claimed, applied, refused, deltas atomic.Int64
		var bad errorSink
		var wg sync.WaitGroup
		for b := range buyers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range claimsEach {
					id := uuid.New()
					if _, err := e.reserve(1, id, one(1, 1)); err != nil {
						bad.add("buyer %d reserve: %v", b, err)
						return
					}
					if _, err := e.e.Claim(ctx, 1, id); err != nil {
						bad.add("buyer %d claim: %v", b, err)
						return
					}
					claimed.Add(1)
				}
			}()
		}
		for w := range syncers {
			seed := uint64(w)
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed, 30))
				for n := range syncsEach {
					l, err := e.e.Level(ctx, k)
					if err != nil {
						bad.add("syncer %d level: %v", w, err)
						return
					}
					d := 1 + r.IntN(3)
					ch := holdfast.StockChange{Key: k, Reason: "sync", ExpectAvailable: intp(l.Available)}
					if n%2 == 0 {
						ch.Set = intp(l.Available + d)
					} else {
						ch.Delta = d
					}
					if n%3 == 0 {
						ch.ID = fmt.Sprintf("sync-%d-%d", w, n)
					}
					got, err := e.e.ChangeStock(ctx, ch)
					var ce *holdfast.StockChangedError
					switch {
					case errors.As(err, &ce):
						if ce.Current == l.Available {
							bad.add("syncer %d (seed %d) refused with current %d equal to its expectation", w, seed, ce.Current)
						}
						refused.Add(1)
					case err != nil:
						bad.add("syncer %d (seed %d) change %d: %v", w, seed, n, err)
						return
					case got.Available != l.Available+d:
						bad.add("syncer %d (seed %d) change %d applied over a moved value: expected %d + %d, answered %d", w, seed, n, l.Available, d, got.Available)
					default:
						applied.Add(1)
						deltas.Add(int64(d))
					}
				}
			}()
		}
		wg.Wait()
		bad.check(t)
		want := initial - int(claimed.Load()) + int(deltas.Load())
		if got := e.level(k); got.Available != want || got.Held != 0 {
			t.Fatalf("lost update: available %d held %d, want %d = %d - %d claimed + %d from %d applied syncs (%d refused)",
				got.Available, got.Held, want, initial, claimed.Load(), deltas.Load(), applied.Load(), refused.Load())
		}
		t.Logf("%d claims, %d syncs applied, %d refused as stale", claimed.Load(), applied.Load(), refused.Load())
	})
}

// testStockImportRaces: imports of the same keys in shuffled entry orders
// run concurrently. None fails (they lock in one order, so none deadlocks
// for good), and each is atomic: at the end every key holds the value of
// one and the same import, the last to commit.
func testStockImportRaces(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: 16})
	ctx := ctxb()
	const workers, each, keys = 6, 5, 8
	var bad errorSink
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 31))
			for n := range each {
				v := 1 + w*each + n // unique per import
				im := holdfast.StockImport{ShopID: 1, ID: fmt.Sprintf("race-%d-%d", w, n), Reason: "sync"}
				for _, i := range r.Perm(keys) {
					im.Entries = append(im.Entries, holdfast.StockImportEntry{ItemID: int64(i + 1), LocationID: 1, Available: v})
				}
				res, err := e.e.ImportStock(ctx, im)
				if err != nil {
					bad.add("worker %d import %d: %v", w, n, err)
					return
				}
				for i, l := range res.Levels {
					if l.Available != v || l.ItemID != im.Entries[i].ItemID {
						bad.add("worker %d import %d answered %+v for entry %d, want item %d at %d", w, n, l, i, im.Entries[i].ItemID, v)
					}
				}
			}
		}()
	}
	wg.Wait()
	bad.check(t)
	first := e.level(key(1, 1)).Available
	for i := int64(2); i <= keys; i++ {
		if got := e.level(key(1, i)).Available; got != first {
			t.Fatalf("imports interleaved: item 1 has %d, item %d has %d", first, i, got)
		}
	}
}
