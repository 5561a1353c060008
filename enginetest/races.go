package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Randomized schedules run seeded mixes of calls. A failure names its seed
// and how to replay it; HOLDFAST_SEED=n runs seed n alone. A seed fixes
// each goroutine's sequence of operations, not how the goroutines
// interleave, so a replay retries the same mix rather than the same
// interleaving: run it with -count=20 to shake a rare one out.

// pinnedSeeds run on every run, beside a fresh seed, under the engines that
// support their strategy. Add a seed here, with the schedule it ran in,
// when it finds a bug. (The first ones were chosen when pinning began, not
// found by failures.)
var pinnedSeeds = []struct {
	clock    raceClock
	strategy holdfast.Strategy
	seed     uint64
}{
	{clockInjected, holdfast.StrategyBatch, 20261130},
	{clockDatabase, holdfast.StrategyPool, 1},
	{clockStepped, holdfast.StrategyCounter, 977},
}

// raceClock is where a randomized schedule's time comes from.
type raceClock string

const (
	// clockInjected: Config.Now is the harness's injected clock, which the
	// schedule moves by up to 90 s at a time; TTLs are minutes.
	clockInjected raceClock = "injected"
	// clockDatabase: Config.Now is unset, the database's clock rules; TTLs
	// are 1-2 s and holds expire while the schedule runs.
	clockDatabase raceClock = "dbclock"
	// clockStepped: Config.Now is the real time stepped by up to ±20 s
	// relative to the database's clock, back and forth during the run;
	// TTLs are 1-3 s.
	clockStepped raceClock = "stepped"
)

// testRandomizedSchedule runs seeded random mixes of reserve, claim,
// release, extend, expiry (sweep), refill, stock changes and invariant
// checks over a few keys with small buffers, under each clock: injected,
// the database's own, and an application clock stepped against the
// database's. Answers are checked, not merely accepted: every claim and
// release is judged by an oracle against the state read right before it
// (see raceGate), so an ErrHoldExpired or ErrOverCommitted must have been
// deserved. The whole database must satisfy the invariant mid-run and at
// the end, and every hold still standing at the end is claimed under the
// same oracle.
func testRandomizedSchedule(t *testing.T, h *Harness) {
	t.Parallel()
	seed := seedFor(t)
	replaying := os.Getenv("HOLDFAST_SEED") != ""
	type run struct {
		clock    raceClock
		strategy holdfast.Strategy
		seed     uint64
	}
	var runs []run
	for _, s := range h.Strategies {
		runs = append(runs, run{clockInjected, s, seed})
	}
	// The real clocks on the first combining strategy (else the first) and
	// one more, rotating with the seed.
	first := h.Strategies[0]
	if len(h.Combining) > 0 {
		first = h.Combining[0]
	}
	other := h.Strategies[seed%uint64(len(h.Strategies))]
	if other == first {
		other = h.Strategies[(seed+1)%uint64(len(h.Strategies))]
	}
	for _, c := range []raceClock{clockDatabase, clockStepped} {
		if replaying {
			// Every schedule the seed may have failed in; -run picks one.
			for _, s := range h.Strategies {
				runs = append(runs, run{c, s, seed})
			}
			continue
		}
		runs = append(runs, run{c, first, seed})
		if other != first {
			runs = append(runs, run{c, other, seed})
		}
	}
	if !replaying {
		for _, p := range pinnedSeeds {
			if slices.Contains(h.Strategies, p.strategy) {
				runs = append(runs, run{p.clock, p.strategy, p.seed})
			}
		}
	}
	for _, r := range runs {
		t.Run(fmt.Sprintf("%s/%s/seed=%d", r.clock, r.strategy, r.seed), func(t *testing.T) {
			t.Parallel()
			raceSchedule(t, h, r.clock, r.strategy, r.seed)
		})
	}
}

// replay says how to rerun subtest t with seed.
func replay(t *testing.T, seed uint64) string {
	return fmt.Sprintf("HOLDFAST_SEED=%d go test -run '^%s$' <the engine's package>", seed, strings.ReplaceAll(t.Name(), "/", "$/^"))
}

// raceKeys are the keys a schedule races over: few, so that holds collide.
var raceKeys = []holdfast.Key{{ShopID: 1, ItemID: 1, LocationID: 1}, {ShopID: 1, ItemID: 2, LocationID: 1}, {ShopID: 1, ItemID: 3, LocationID: 2}}

// raceGate makes claim answers checkable while everything else races: per
// key, a claim holds the key exclusively, and whatever else changes what a
// claim may answer (reserve, release, stock change on the key; sweep on
// every key) holds it shared. Under its exclusive hold a claim reads the
// hold's status and its keys' levels, which nothing can change before it
// runs, and the answer must be exactly what they imply. Refill, extend,
// reads and invariant checks, which change neither, run ungated. Keys are
// taken in index order, so the gate cannot deadlock; it is taken before any
// engine call and released after, so it never waits on the database.
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

// storedStatus is the hold's status as the sweep and the lifecycle left it:
// held until claimed, released or swept, whatever its expiry says. A hold
// past its expiry but not swept reads expired and claimable: still held.
func storedStatus(e *env, id uuid.UUID) (holdfast.Status, error) {
	got, err := e.e.Hold(ctxb(), 1, id)
	if err != nil {
		return "", err
	}
	if got.Status == holdfast.StatusExpired && got.Claimable {
		return holdfast.StatusHeld, nil
	}
	return got.Status, nil
}

// levels reads the levels of lines' keys, in line order.
func levels(e *env, lines []holdfast.Line) ([]holdfast.Level, error) {
	out := make([]holdfast.Level, len(lines))
	for i, l := range lines {
		lv, err := e.e.Level(ctxb(), holdfast.Key{ShopID: 1, ItemID: l.ItemID, LocationID: l.LocationID})
		if err != nil {
			return nil, err
		}
		out[i] = *lv
	}
	return out, nil
}

// judgedClaim claims id under the gate, with the state right before and
// after it, for claimCase.judge.
func judgedClaim(e *env, g *raceGate, id uuid.UUID, lines []holdfast.Line) (*claimCase, error) {
	defer g.exclusive(keyIndexes(lines))()
	c := &claimCase{id: id, lines: lines}
	var err error
	if c.status, err = storedStatus(e, id); err != nil {
		return nil, err
	}
	if c.before, err = levels(e, lines); err != nil {
		return nil, err
	}
	c.h, c.err = e.e.Claim(ctxb(), 1, id)
	if c.after, err = levels(e, lines); err != nil {
		return nil, err
	}
	if c.statusAfter, err = storedStatus(e, id); err != nil {
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

// countingObserver counts the engine's retries and keeps each op's
// slowest answer, for the schedule's log.
type countingObserver struct {
	mu      sync.Mutex
	retries map[string]int
	slow    map[string]time.Duration
}

func (o *countingObserver) Op(op, outcome string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d > o.slow[op] {
		o.slow[op] = d
	}
}

func (o *countingObserver) Retry(op, state string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retries[op+" "+state]++
}

func (o *countingObserver) Replenished(holdfast.Key, bool, int) {}
func (o *countingObserver) Expired(int)                         {}
func (o *countingObserver) Claimed(time.Duration)               {}

// raceSchedule runs one seeded schedule and fails t on any wrong answer.
func raceSchedule(t *testing.T, h *Harness, clock raceClock, s holdfast.Strategy, seed uint64) {
	t.Logf("seed %d; replay: %s", seed, replay(t, seed))
	iterations, workers := 60, 8
	if long() {
		iterations, workers = 2000, 16
	}
	// clockDatabase runs until a sweep has expired something, at most
	// this many operations per goroutine, then iterations more.
	const untilExpiryMax = 50_000
	obs := &countingObserver{retries: map[string]int{}, slow: map[string]time.Duration{}}
	// Timeouts a loaded machine does not reach: the schedule judges
	// answers, not speed, and a statement cancelled because a busy 2-core
	// machine ran it slowly is an ErrUnavailable that says nothing about
	// the engine. The timeouts' own behaviour is the fault suites' concern.
	cfg := holdfast.Config{Strategy: s, PoolCap: 5, Slots: 3, LowWaterPercent: 50, Observer: obs,
		LockTimeout: 30 * time.Second, StatementTimeout: 2 * time.Minute, IdleInTransactionTimeout: 2 * time.Minute}
	opts := Options{Conns: workers + 12}
	var offset atomic.Int64 // clockStepped: application minus database time, ns
	ttl := func(r *rand.Rand) time.Duration { return time.Duration(1+r.IntN(3)) * time.Minute }
	switch clock {
	case clockDatabase:
		opts.RealClock = true
		ttl = func(r *rand.Rand) time.Duration { return time.Duration(1+r.IntN(2)) * time.Second }
	case clockStepped:
		first := rand.New(rand.NewPCG(seed, 99))
		offset.Store(int64(time.Duration(first.IntN(41)-20) * time.Second))
		opts.RealClock = true
		opts.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())).UTC().Truncate(time.Microsecond) }
		ttl = func(r *rand.Rand) time.Duration { return time.Duration(1+r.IntN(3)) * time.Second }
	}
	e := h.newEnv(t, cfg, opts)
	e.allowOver = true
	ctx := ctxb()
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
			got, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: lines, TTL: ttl(r)})
			release()
			switch {
			case err == nil:
				mu.Lock()
				ids = append(ids, id)
				held[id] = got.Lines
				mu.Unlock()
			case !errors.Is(err, holdfast.ErrInsufficientStock):
				fail("reserve: %v", err)
			}
		case 3:
			if id, lines, ok := pick(r); ok {
				c, err := judgedClaim(e, g, id, lines)
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
				status, err := storedStatus(e, id)
				if err == nil {
					_, err = e.e.Release(ctx, 1, id)
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
				_, err := e.e.Extend(ctx, 1, id, ttl(r))
				switch {
				case errors.Is(err, holdfast.ErrHoldExpired):
					// Only a swept hold answers expired; it stays swept
					// unless a late claim took it since.
					if st, serr := storedStatus(e, id); serr != nil || (st != holdfast.StatusExpired && st != holdfast.StatusClaimed) {
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
				e.Clock.Advance(time.Duration(r.IntN(90)) * time.Second)
			case clockStepped:
				offset.Store(int64(time.Duration(r.IntN(41)-20) * time.Second))
			}
			release := g.shared(allKeys)
			n, err := e.e.SweepOnce(ctx)
			release()
			if err != nil {
				fail("sweep: %v", err)
			}
			expired.Add(int64(n))
		case 7:
			if e.Refill != nil {
				if err := e.Refill(ctx); err != nil {
					fail("refill: %v", err)
				}
			} else if _, err := e.e.Level(ctx, raceKeys[r.IntN(len(raceKeys))]); err != nil {
				fail("level: %v", err)
			}
		case 8:
			i := r.IntN(len(raceKeys))
			release := g.shared([]int{i})
			// Deltas below zero available are refused as bad arguments;
			// those are expected.
			_, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: raceKeys[i], Delta: r.IntN(7) - 2, Reason: "random adjust"})
			release()
			if err != nil && !errors.Is(err, holdfast.ErrInvalidArgument) {
				fail("adjust: %v", err)
			}
		case 9:
			rep, err := e.e.CheckInvariant(ctx)
			if err != nil {
				fail("check: %v", err)
			} else if !rep.OK() {
				// Checked again at once: a report the next snapshot no
				// longer shows points at the check's read (two moments in
				// one snapshot), one that stays at a committed state.
				again, err := e.e.CheckInvariant(ctx)
				fail("invariant broken mid-run: %s (checked again at once: %v %v)", rep, again, err)
			}
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
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
		c, err := judgedClaim(e, g, id, held[id])
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
