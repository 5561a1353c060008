package holdfast_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pgtest"
)

// TestSeedRace is the seed's race: 64 clients x 20 attempts for 50 units.
// Exactly 50 are held, every attempt is answered, no deadlock reaches a
// caller. The seed's SQL took ~17 s here; holdfast answers sold-out attempts
// without queueing on the replenishment lock (the time is logged, never
// asserted: machines are shared).
func TestSeedRace(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			e := newEnv(t, patient(holdfast.Config{Strategy: s}), 70)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 7}
			e.stock(k, 50)
			var held, sold, other atomic.Int64
			var otherErr atomic.Value
			var wg sync.WaitGroup
			start := time.Now()
			for range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 20 {
						_, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(),
							Lines: []holdfast.Line{{ItemID: 42, LocationID: 7, Quantity: 1}}})
						switch {
						case err == nil:
							held.Add(1)
						case errors.Is(err, holdfast.ErrInsufficientStock):
							sold.Add(1)
						default:
							other.Add(1)
							otherErr.Store(err)
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			if other.Load() > 0 {
				t.Fatalf("%d attempts failed with errors other than sold out, e.g. %v", other.Load(), otherErr.Load())
			}
			if held.Load() != 50 || held.Load()+sold.Load() != 1280 {
				t.Fatalf("held %d, sold out %d; want 50 and 1230", held.Load(), sold.Load())
			}
			if l := e.level(k); l.Held != 50 || l.Pooled != 0 || l.Sellable != 0 {
				t.Fatalf("level: %+v", l)
			}
			t.Logf("strategy %s: 1280 attempts answered in %v (50 held, 1230 sold out)", s, elapsed)
		})
	}
}

// TestConcurrentIdempotentRetries fires the same reservation many times at
// once: one hold per checkout, every retry answered with it, no unit leaked.
func TestConcurrentIdempotentRetries(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, patient(holdfast.Config{Strategy: s, PoolCap: 20, Slots: 4, LowWaterPercent: 100}), 24)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 3, ItemID: 9, LocationID: 1}
			e.stock(k, 1000)
			const checkouts, retries = 30, 8
			var fresh, replayed atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, checkouts*retries)
			for range checkouts {
				id := uuid.New()
				for range retries {
					wg.Add(1)
					go func() {
						defer wg.Done()
						h, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 3, CheckoutID: id, Lines: one(9, 2)})
						if err != nil {
							errs <- err
							return
						}
						if h.Replayed {
							replayed.Add(1)
						} else {
							fresh.Add(1)
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("retry failed: %v", err)
			}
			if fresh.Load() != checkouts || replayed.Load() != checkouts*(retries-1) {
				t.Fatalf("fresh %d replayed %d", fresh.Load(), replayed.Load())
			}
			if l := e.level(k); l.Held != 2*checkouts {
				t.Fatalf("held %d, want %d", l.Held, 2*checkouts)
			}
			assertNoLeak(t, e, k)
		})
	}
}

// assertNoLeak checks that after a replenish the buffer holds exactly what
// it should: min(cap, available - held) for pool keys, available - held for
// counter and slotted keys. A unit taken from a buffer without becoming a
// hold would be missing here.
func assertNoLeak(t *testing.T, e *env, k holdfast.Key) {
	t.Helper()
	if _, err := e.c.Replenish(context.Background()); err != nil {
		t.Fatal(err)
	}
	l := e.level(k)
	want := l.Available - l.Held
	if l.Strategy == holdfast.StrategyPool {
		want = min(want, l.PoolCap)
	}
	if l.Pooled != want {
		t.Fatalf("leak: %+v; pooled should be %d", l, want)
	}
}

// pinnedCartSeed runs TestOppositeOrderCarts on every run, beside a fresh
// seed.
const pinnedCartSeed = 1

// TestOppositeOrderCarts reserves multi-line carts over the same keys in
// opposite and random orders: lines are locked in sorted order, so no
// deadlock reaches a caller, and nothing is double-counted.
func TestOppositeOrderCarts(t *testing.T) {
	t.Parallel()
	seed, replaying := testSeed(t)
	type run struct {
		strategy holdfast.Strategy
		seed     uint64
	}
	var runs []run
	for _, s := range strategies {
		runs = append(runs, run{s, seed})
	}
	if !replaying {
		runs = append(runs, run{holdfast.StrategyBatch, pinnedCartSeed})
	}
	for _, rn := range runs {
		s, seed := rn.strategy, rn.seed
		t.Run(fmt.Sprintf("%s/seed=%d", s, seed), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d; replay: %s", seed, replay(t, seed))
			e := newEnv(t, patient(holdfast.Config{Strategy: s, PoolCap: 15, Slots: 3}), 24)
			ctx := context.Background()
			items := []int64{1, 2, 3, 4}
			for _, it := range items {
				e.stock(holdfast.Key{ShopID: 1, ItemID: it, LocationID: 1}, 60)
			}
			var wg sync.WaitGroup
			var ok, sold atomic.Int64
			errs := make(chan error, 400)
			for g := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 15 {
						perm := r.Perm(len(items))
						n := 2 + r.IntN(3)
						var lines []holdfast.Line
						for _, p := range perm[:n] {
							lines = append(lines, holdfast.Line{ItemID: items[p], LocationID: 1, Quantity: 1 + r.IntN(2)})
						}
						id := uuid.New()
						_, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: lines})
						switch {
						case err == nil:
							ok.Add(1)
							if r.IntN(3) == 0 {
								if _, err := e.c.Release(ctx, 1, id); err != nil {
									errs <- err
								}
							}
						case errors.Is(err, holdfast.ErrInsufficientStock):
							sold.Add(1)
						default:
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("seed %d: cart failed: %v (SQLSTATE %q); replay: %s", seed, err, holdfast.SQLState(err), replay(t, seed))
			}
			if ok.Load() == 0 {
				t.Fatal("no cart was reserved")
			}
			t.Logf("%d carts held, %d sold out", ok.Load(), sold.Load())
		})
	}
}

// Randomized tests run seeded schedules. A failure names its seed and the
// command that replays it; HOLDFAST_SEED=n runs seed n alone. A seed fixes
// each goroutine's sequence of operations, not how the goroutines
// interleave, so a replay retries the same mix rather than the same
// interleaving: run it with -count=20 to shake a rare one out.

// pinnedSeeds run on every run, beside a fresh seed. Add a seed here, with
// the schedule it ran in, when it finds a bug. (The first ones were chosen
// when pinning began, not found by failures.)
var pinnedSeeds = []struct {
	clock    raceClock
	strategy holdfast.Strategy
	seed     uint64
}{
	{clockInjected, holdfast.StrategyBatch, 20261130},
	{clockDatabase, holdfast.StrategyPool, 1},
	{clockStepped, holdfast.StrategyCounter, 977},
}

// testSeed is HOLDFAST_SEED when set (replaying), else a fresh seed; the
// second result reports a replay.
func testSeed(t *testing.T) (uint64, bool) {
	t.Helper()
	if s := os.Getenv("HOLDFAST_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HOLDFAST_SEED=%q: %v", s, err)
		}
		return seed, true
	}
	return rand.Uint64() >> 1, false
}

// replay is the command that reruns subtest t with seed.
func replay(t *testing.T, seed uint64) string {
	return fmt.Sprintf("HOLDFAST_SEED=%d go test -run '^%s$' .", seed, strings.ReplaceAll(t.Name(), "/", "$/^"))
}

// raceClock is where a randomized schedule's time comes from.
type raceClock string

const (
	// clockInjected: Config.Now is a pgtest.Clock the schedule moves by
	// up to 90 s at a time; TTLs are minutes.
	clockInjected raceClock = "injected"
	// clockDatabase: Config.Now is unset, the database's clock rules; TTLs
	// are 1-2 s and holds expire while the schedule runs.
	clockDatabase raceClock = "dbclock"
	// clockStepped: Config.Now is the real time stepped by up to ±20 s
	// relative to the database's clock, back and forth during the run;
	// TTLs are 1-3 s.
	clockStepped raceClock = "stepped"
)

// TestRandomizedRaces runs seeded random mixes of reserve, claim, release,
// extend, expire (sweep), replenish, adjust and invariant checks over a
// few keys with small buffers, under each clock: injected, the database's
// own, and an application clock stepped against the database's. Answers
// are checked, not merely accepted: every claim and release is judged by
// an oracle against the state read right before it (see raceGate), so an
// ErrHoldExpired or ErrOverCommitted must have been deserved. The whole
// database must satisfy the invariant mid-run and at the end, and every
// hold still standing at the end is claimed under the same oracle.
func TestRandomizedRaces(t *testing.T) {
	t.Parallel()
	seed, replaying := testSeed(t)
	type run struct {
		clock    raceClock
		strategy holdfast.Strategy
		seed     uint64
	}
	var runs []run
	for _, s := range strategies {
		runs = append(runs, run{clockInjected, s, seed})
	}
	// The real clocks on the default strategy and one more, rotating with
	// the seed.
	other := strategies[seed%uint64(len(strategies))]
	if other == holdfast.StrategyBatch {
		other = holdfast.StrategyPool
	}
	for _, c := range []raceClock{clockDatabase, clockStepped} {
		if replaying {
			// Every schedule the seed may have failed in; -run picks one.
			for _, s := range strategies {
				runs = append(runs, run{c, s, seed})
			}
			continue
		}
		runs = append(runs, run{c, holdfast.StrategyBatch, seed}, run{c, other, seed})
	}
	if !replaying {
		for _, p := range pinnedSeeds {
			runs = append(runs, run{p.clock, p.strategy, p.seed})
		}
	}
	for _, r := range runs {
		t.Run(fmt.Sprintf("%s/%s/seed=%d", r.clock, r.strategy, r.seed), func(t *testing.T) {
			t.Parallel()
			raceSchedule(t, r.clock, r.strategy, r.seed)
		})
	}
}

// raceKeys are the keys a schedule races over: few, so that holds collide.
var raceKeys = []holdfast.Key{{ShopID: 1, ItemID: 1, LocationID: 1}, {ShopID: 1, ItemID: 2, LocationID: 1}, {ShopID: 1, ItemID: 3, LocationID: 2}}

// raceGate makes claim answers checkable while everything else races: per
// key, a claim holds the key exclusively, and whatever else changes what a
// claim may answer (reserve, release, adjust on the key; sweep on every
// key) holds it shared. Under its exclusive hold a claim reads the hold's
// status and its keys' levels, which nothing can change before it runs, and
// the answer must be exactly what they imply. Replenish, extend, reads and
// invariant checks, which change neither, run ungated. Keys are taken in
// index order, so the gate cannot deadlock; it is taken before any
// database call and released after, so it never waits on the database.
type raceGate struct{ keys [3]sync.RWMutex }

func keyIndexes(lines []holdfast.Line) []int {
	var idx []int
	for i, k := range raceKeys {
		for _, l := range lines {
			if l.ItemID == k.ItemID && l.LocationID == k.LocationID {
				idx = append(idx, i)
			}
		}
	}
	return idx
}

func (g *raceGate) shared(idx []int) func() {
	for _, i := range idx {
		g.keys[i].RLock()
	}
	return func() {
		for _, i := range idx {
			g.keys[i].RUnlock()
		}
	}
}

func (g *raceGate) exclusive(idx []int) func() {
	for _, i := range idx {
		g.keys[i].Lock()
	}
	return func() {
		for _, i := range idx {
			g.keys[i].Unlock()
		}
	}
}

var allKeys = []int{0, 1, 2}

// rawStatus is the hold's stored status: 'held' until claimed, released or
// swept, whatever its expiry says.
func rawStatus(ctx context.Context, e *env, id uuid.UUID) (holdfast.Status, error) {
	var s string
	err := e.db.Pool.QueryRow(ctx, "SELECT status FROM holds WHERE checkout_id = $1", id).Scan(&s)
	return holdfast.Status(s), err
}

// levels reads the levels of lines' keys, in line order.
func levels(ctx context.Context, e *env, lines []holdfast.Line) ([]holdfast.Level, error) {
	out := make([]holdfast.Level, len(lines))
	for i, l := range lines {
		lv, err := e.c.Level(ctx, holdfast.Key{ShopID: 1, ItemID: l.ItemID, LocationID: l.LocationID})
		if err != nil {
			return nil, err
		}
		out[i] = *lv
	}
	return out, nil
}

// judgedClaim claims id under the gate, with the state right before and
// after it, for claimCase.judge.
func judgedClaim(ctx context.Context, e *env, g *raceGate, id uuid.UUID, lines []holdfast.Line) (*claimCase, error) {
	defer g.exclusive(keyIndexes(lines))()
	c := &claimCase{id: id, lines: lines}
	var err error
	if c.status, err = rawStatus(ctx, e, id); err != nil {
		return nil, err
	}
	if c.before, err = levels(ctx, e, lines); err != nil {
		return nil, err
	}
	c.h, c.err = e.c.Claim(ctx, 1, id)
	if c.after, err = levels(ctx, e, lines); err != nil {
		return nil, err
	}
	if c.statusAfter, err = rawStatus(ctx, e, id); err != nil {
		return nil, err
	}
	return c, nil
}

// claimCase is one claim: the hold's stored status and its keys' levels
// right before it and right after, and its answer.
type claimCase struct {
	id                  uuid.UUID
	status, statusAfter holdfast.Status
	lines               []holdfast.Line
	before, after       []holdfast.Level
	h                   *holdfast.Hold
	err                 error
}

// judge names the case the state before the claim puts it in and says why
// its answer was not the one that state implies ("" when it was):
//   - "replayed" (claimed before): the claimed hold, replayed;
//   - "released": ErrHoldReleased;
//   - "held" (held, expired or not, unswept): success, each key's
//     available and held units down by its line;
//   - "over-committed" (held, a key has less available than its line):
//     ErrOverCommitted;
//   - "late" (swept, every key has the line's sellable units): success,
//     each key's available down by its line, its held units unchanged;
//   - "expired" (swept, some key short): an *ExpiredError naming exactly
//     the short lines with their sellable units.
//
// A refused claim changes neither a level nor the status.
func (c *claimCase) judge() (kind, wrong string) {
	state := fmt.Sprintf("claim %s (status %s, lines %v, levels before %v, after %v, status after %s): answered %v", c.id, c.status, c.lines, c.before, c.after, c.statusAfter, c.err)
	unchanged := func() string {
		for i := range c.lines {
			if c.after[i].Available != c.before[i].Available || c.after[i].Held != c.before[i].Held {
				return state + ": a refused claim changed a level"
			}
		}
		if c.statusAfter != c.status {
			return state + ": a refused claim changed the status"
		}
		return ""
	}
	took := func(fromHeld bool) string {
		if c.err != nil {
			return state + ": want success"
		}
		if c.h.Replayed || c.statusAfter != holdfast.StatusClaimed {
			return fmt.Sprintf("%s: replayed %v; want a fresh claim", state, c.h.Replayed)
		}
		for i, l := range c.lines {
			heldDrop := 0
			if fromHeld {
				heldDrop = l.Quantity
			}
			if c.after[i].Available != c.before[i].Available-l.Quantity || c.after[i].Held != c.before[i].Held-heldDrop {
				return state + ": levels did not move by the claimed lines"
			}
		}
		return ""
	}
	switch c.status {
	case holdfast.StatusClaimed:
		if c.err != nil || !c.h.Replayed {
			return "replayed", state + ": want the claimed hold, replayed"
		}
		return "replayed", unchanged()
	case holdfast.StatusReleased:
		if !errors.Is(c.err, holdfast.ErrHoldReleased) {
			return "released", state + ": want ErrHoldReleased"
		}
		return "released", unchanged()
	case holdfast.StatusHeld:
		over := false
		for i, l := range c.lines {
			over = over || c.before[i].Available < l.Quantity
		}
		if !over {
			return "held", took(true)
		}
		if !errors.Is(c.err, holdfast.ErrOverCommitted) {
			return "over-committed", state + ": a key has less available than its line; want ErrOverCommitted"
		}
		return "over-committed", unchanged()
	case holdfast.StatusExpired:
		var want []holdfast.Shortfall
		for i, l := range c.lines {
			if c.before[i].Sellable < l.Quantity {
				want = append(want, holdfast.Shortfall{ItemID: l.ItemID, LocationID: l.LocationID, Requested: l.Quantity, Sellable: c.before[i].Sellable})
			}
		}
		if len(want) == 0 {
			return "late", took(false)
		}
		var ee *holdfast.ExpiredError
		if !errors.As(c.err, &ee) || !slices.Equal(ee.Lines, want) {
			return "expired", fmt.Sprintf("%s: want an *ExpiredError with shortfall %v", state, want)
		}
		return "expired", unchanged()
	}
	return "unknown", state + ": unknown status"
}

// TestClaimJudgeCatches feeds the claim oracle wrong answers, each of
// which it must reject, and right ones, which it must accept.
func TestClaimJudgeCatches(t *testing.T) {
	t.Parallel()
	line := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}
	lv := func(avail, held int) []holdfast.Level {
		return []holdfast.Level{{Available: avail, Held: held, Sellable: max(0, avail-held)}}
	}
	ok := &holdfast.Hold{}
	short := &holdfast.ExpiredError{Lines: []holdfast.Shortfall{{ItemID: 1, LocationID: 1, Requested: 2, Sellable: 1}}}
	for _, tc := range []struct {
		name  string
		c     claimCase
		right bool
	}{
		{"held claimed", claimCase{status: "held", statusAfter: "claimed", before: lv(5, 2), after: lv(3, 0), h: ok}, true},
		{"held refused as over-committed", claimCase{status: "held", statusAfter: "held", before: lv(5, 2), after: lv(5, 2), err: holdfast.ErrOverCommitted}, false},
		{"held refused as expired", claimCase{status: "held", statusAfter: "held", before: lv(5, 2), after: lv(5, 2), err: short}, false},
		{"held claimed without deducting", claimCase{status: "held", statusAfter: "claimed", before: lv(5, 2), after: lv(5, 0), h: ok}, false},
		{"over-committed refused", claimCase{status: "held", statusAfter: "held", before: lv(1, 2), after: lv(1, 2), err: holdfast.ErrOverCommitted}, true},
		{"over-committed claimed", claimCase{status: "held", statusAfter: "claimed", before: lv(1, 2), after: lv(-1, 0), h: ok}, false},
		{"late claim taken", claimCase{status: "expired", statusAfter: "claimed", before: lv(5, 2), after: lv(3, 2), h: ok}, true},
		{"late claim refused while sellable", claimCase{status: "expired", statusAfter: "expired", before: lv(5, 2), after: lv(5, 2), err: short}, false},
		{"late claim refused rightly", claimCase{status: "expired", statusAfter: "expired", before: lv(5, 4), after: lv(5, 4), err: short}, true},
		{"late claim refused with a wrong shortfall", claimCase{status: "expired", statusAfter: "expired", before: lv(5, 5), after: lv(5, 5), err: short}, false},
		{"late claim taken while short", claimCase{status: "expired", statusAfter: "claimed", before: lv(5, 4), after: lv(3, 4), h: ok}, false},
		{"released claimed", claimCase{status: "released", statusAfter: "claimed", before: lv(5, 0), after: lv(3, 0), h: ok}, false},
		{"claimed twice, not replayed", claimCase{status: "claimed", statusAfter: "claimed", before: lv(5, 0), after: lv(3, 0), h: ok}, false},
	} {
		tc.c.lines = line
		kind, wrong := tc.c.judge()
		if (wrong == "") != tc.right {
			t.Errorf("%s (%s): judged %q, want right=%v", tc.name, kind, wrong, tc.right)
		}
	}
}

// raceSchedule runs one seeded schedule and fails t on any wrong answer.
func raceSchedule(t *testing.T, clock raceClock, s holdfast.Strategy, seed uint64) {
	t.Logf("seed %d; replay: %s", seed, replay(t, seed))
	iterations := 60
	if os.Getenv("HOLDFAST_LONG") != "" {
		iterations = 2000
	}
	// clockDatabase runs until a sweep has expired something, at most
	// this many operations per goroutine, then iterations more.
	const untilExpiryMax = 50_000
	obs := &countingObserver{retries: map[string]int{}, slow: map[string]time.Duration{}}
	cfg := patient(holdfast.Config{Strategy: s, PoolCap: 5, Slots: 3, LowWaterPercent: 50, Observer: obs})
	var e *env
	var offset atomic.Int64 // clockStepped: application minus database time, ns
	ttl := func(r *rand.Rand) time.Duration { return time.Duration(1+r.IntN(3)) * time.Minute }
	switch clock {
	case clockInjected:
		e = newEnv(t, cfg, 20)
	case clockDatabase:
		e = newEnvNow(t, cfg, 20, nil)
		ttl = func(r *rand.Rand) time.Duration { return time.Duration(1+r.IntN(2)) * time.Second }
	case clockStepped:
		first := rand.New(rand.NewPCG(seed, 99))
		offset.Store(int64(time.Duration(first.IntN(41)-20) * time.Second))
		e = newEnvNow(t, cfg, 20, func() time.Time { return time.Now().Add(time.Duration(offset.Load())).UTC().Truncate(time.Microsecond) })
		ttl = func(r *rand.Rand) time.Duration { return time.Duration(1+r.IntN(3)) * time.Second }
	}
	e.allowOver = true
	var expired atomic.Int64
	var kindsMu sync.Mutex
	kinds := map[string]int{}
	tally := func(kind string) {
		kindsMu.Lock()
		defer kindsMu.Unlock()
		kinds[kind]++
	}
	defer func() {
		t.Logf("%d holds expired by sweeps; claims judged by case %v; retries %v, slowest %v", expired.Load(), kinds, obs.retries, obs.slow)
	}()
	ctx := context.Background()
	for _, k := range raceKeys {
		e.stock(k, 12)
	}
	g := &raceGate{}
	var mu sync.Mutex
	var ids []uuid.UUID
	held := map[uuid.UUID][]holdfast.Line{}
	pick := func(r *rand.Rand) (uuid.UUID, []holdfast.Line, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(ids) == 0 {
			return uuid.Nil, nil, false
		}
		id := ids[r.IntN(len(ids))]
		return id, held[id], true
	}
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	step := func(r *rand.Rand) {
		switch r.IntN(10) {
		case 0, 1, 2:
			var lines []holdfast.Line
			for _, i := range r.Perm(len(raceKeys))[:1+r.IntN(2)] {
				lines = append(lines, holdfast.Line{ItemID: raceKeys[i].ItemID, LocationID: raceKeys[i].LocationID, Quantity: 1 + r.IntN(3)})
			}
			id := uuid.New()
			release := g.shared(keyIndexes(lines))
			h, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: lines, TTL: ttl(r)})
			release()
			switch {
			case err == nil:
				mu.Lock()
				ids = append(ids, id)
				held[id] = h.Lines
				mu.Unlock()
			case !errors.Is(err, holdfast.ErrInsufficientStock):
				fail("reserve: %v", err)
			}
		case 3:
			if id, lines, ok := pick(r); ok {
				c, err := judgedClaim(ctx, e, g, id, lines)
				if err != nil {
					fail("claim %s: %v", id, err)
					return
				}
				kind, wrong := c.judge()
				tally(kind)
				if wrong != "" {
					fail("%s", wrong)
				}
			}
		case 4:
			if id, lines, ok := pick(r); ok {
				// Claims are shut out, so whether the hold is claimed
				// cannot change under the release.
				release := g.shared(keyIndexes(lines))
				status, err := rawStatus(ctx, e, id)
				if err == nil {
					_, err = e.c.Release(ctx, 1, id)
				}
				release()
				switch {
				case status == holdfast.StatusClaimed && !errors.Is(err, holdfast.ErrHoldClaimed):
					fail("release of claimed %s answered %v, want ErrHoldClaimed", id, err)
				case status != holdfast.StatusClaimed && err != nil:
					fail("release of %s %s: %v", status, id, err)
				}
			}
		case 5:
			if id, _, ok := pick(r); ok {
				_, err := e.c.Extend(ctx, 1, id, ttl(r))
				switch {
				case errors.Is(err, holdfast.ErrHoldExpired):
					// Only a swept hold answers expired; it stays swept
					// unless a late claim took it since.
					if st, serr := rawStatus(ctx, e, id); serr != nil || (st != holdfast.StatusExpired && st != holdfast.StatusClaimed) {
						fail("extend of %s answered ErrHoldExpired; status now %s (%v)", id, st, serr)
					}
				case err != nil && !errors.Is(err, holdfast.ErrHoldClaimed) && !errors.Is(err, holdfast.ErrHoldReleased) &&
					!errors.Is(err, holdfast.ErrLifetimeExceeded):
					fail("extend: %v", err)
				}
			}
		case 6:
			switch clock {
			case clockInjected:
				e.clock.Advance(time.Duration(r.IntN(90)) * time.Second)
			case clockStepped:
				offset.Store(int64(time.Duration(r.IntN(41)-20) * time.Second))
			}
			release := g.shared(allKeys)
			n, err := e.c.SweepOnce(ctx)
			release()
			if err != nil {
				fail("sweep: %v", err)
			}
			expired.Add(int64(n))
		case 7:
			if _, err := e.c.Replenish(ctx); err != nil {
				fail("replenish: %v", err)
			}
		case 8:
			i := r.IntN(len(raceKeys))
			release := g.shared([]int{i})
			_, err := e.c.Adjust(ctx, raceKeys[i], r.IntN(7)-2, "random adjust", "")
			release()
			if err != nil && !errors.Is(err, holdfast.ErrInvalidArgument) {
				fail("adjust: %v", err)
			}
		case 9:
			rep, err := e.c.CheckInvariant(ctx)
			if err != nil {
				fail("check: %v", err)
			} else if !rep.OK() {
				fail("invariant broken mid-run: %s", rep)
			}
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			if clock == clockDatabase {
				for n := 0; expired.Load() == 0 && n < untilExpiryMax; n++ {
					step(r)
				}
			}
			for range iterations {
				step(r)
			}
		}()
	}
	wg.Wait()
	if clock == clockDatabase && expired.Load() == 0 {
		failures = append(failures, fmt.Sprintf("no hold expired in %d operations per goroutine on the database clock", untilExpiryMax+iterations))
	}
	if len(failures) > 0 {
		t.Fatalf("seed %d: %d wrong answers, first ones:\n  %s\nreplay: %s", seed, len(failures), strings.Join(failures, "\n  "), replay(t, seed))
	}
	e.checkInvariant(true)
	// Every hold still standing is claimed, one at a time, under the same
	// oracle: an acknowledged hold that was neither released nor swept
	// must be claimable unless its key was over-committed by a stock
	// reduction, and a swept one exactly when its units are sellable.
	for _, id := range ids {
		c, err := judgedClaim(ctx, e, g, id, held[id])
		if err != nil {
			t.Fatal(err)
		}
		kind, wrong := c.judge()
		tally("final " + kind)
		if wrong != "" {
			t.Fatalf("seed %d: final %s\nreplay: %s", seed, wrong, replay(t, seed))
		}
	}
	e.checkInvariant(true)
}

// newEnvNow is newEnv with now as Config.Now: nil for the database's own
// clock.
func newEnvNow(t *testing.T, cfg holdfast.Config, maxConns int, now func() time.Time) *env {
	t.Helper()
	db := pgtest.DB(t, maxConns)
	cfg.Now = now
	c, err := holdfast.New(db.Pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, c: c}
	t.Cleanup(func() { e.checkInvariant(e.allowOver) })
	return e
}

// patient gives a concurrency test's client timeouts that a loaded machine
// does not reach: these tests judge answers, not speed, and a statement
// cancelled because a busy 2-core machine ran it slowly is an
// ErrUnavailable that says nothing about the engine. The timeouts' own
// behaviour is tested by the fault suite.
func patient(cfg holdfast.Config) holdfast.Config {
	cfg.LockTimeout = 30 * time.Second
	cfg.StatementTimeout = 2 * time.Minute
	cfg.IdleInTransactionTimeout = 2 * time.Minute
	return cfg
}
