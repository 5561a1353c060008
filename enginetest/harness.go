package enginetest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Harness is what an engine's tests give the suite.
type Harness struct {
	// New returns a fresh, migrated engine configured with cfg, isolated
	// from every other engine the suite makes (its own database or schema),
	// and cleaned up when t ends. cfg.Now is nil: New sets it to an
	// injected clock and returns that clock in the Instance — unless
	// opts.RealClock, when New sets cfg.Now to opts.Now instead (nil: the
	// database's own clock). Required.
	New func(t *testing.T, cfg holdfast.Config, opts Options) *Instance
	// Strategies are the allocation strategies the engine supports; every
	// per-strategy test runs once for each. Required.
	Strategies []holdfast.Strategy
	// Combining are the strategies under which the engine combines
	// concurrent one-line reservations of a key into one transaction (the
	// PostgreSQL engine's StrategyBatch). The suite runs its combining
	// tests for these.
	Combining []holdfast.Strategy
	// Skip names subtests the engine is known not to pass yet, with the
	// reason and the issue that will fix it; the suite skips them with that
	// reason. Keys are the top-level subtest names (e.g.
	// "CheckoutIDsPerShop"). Keep it empty: it is for work in flight.
	Skip map[string]string
}

// Options are the per-test needs an engine must meet beyond its Config.
type Options struct {
	// Conns is how many concurrent database connections the test needs (0:
	// the engine's test default, at least 20).
	Conns int
	// ExactConns asks for a pool of exactly Conns connections, not more
	// (testPoolExact: every call holds one; none may need a second).
	ExactConns bool
	// RealClock asks for Config.Now = Now instead of the injected clock:
	// the randomized schedules run on the database's own clock (Now nil)
	// and on an application clock stepped against it.
	RealClock bool
	Now       func() time.Time
}

// Instance is one engine under test.
type Instance struct {
	// Engine is the engine; required.
	Engine holdfast.Engine
	// Clock is the injected clock that Config.Now reads; required.
	Clock Clock
	// Refill, when not nil, refills the buffers of every key once (the
	// PostgreSQL engine's Replenish). The suite then also checks the
	// buffers exactly: pooled = available - held (capped at the pool cap
	// for pool keys) after a refill. Engines without a background refill
	// leave it nil.
	Refill func(ctx context.Context) error
	// Rows, when not nil, counts the rows of every table the engine writes
	// (table name to count): the suite checks that rejected calls wrote
	// nothing. Without it the suite checks what the contract can see.
	Rows func(ctx context.Context) (map[string]int, error)
	// Grep, when not nil, reports whether any row of any table the
	// engine writes holds s in its text (the raw buyer id must never be
	// stored). Without it the suite skips that check.
	Grep func(ctx context.Context, s string) (bool, error)
	// ClaimTransactions, when not nil, counts the transactions (or
	// statements) that wrote claims' ledger entries, for an engine that
	// combines concurrent claims (driver.ClaimCombiner): the suite checks
	// that they were combined. It is called only on the database's own
	// clock (Options.RealClock, Now nil).
	ClaimTransactions func(ctx context.Context) (int, error)
	// EventRows, when not nil, counts the event rows the engine stored
	// for a shop, for an engine that stores the holds one combined batch
	// creates as one row: the suite checks that they were grouped.
	EventRows func(ctx context.Context, shop int64) (int, error)
}

// Clock is an injected clock: tests move it instead of sleeping.
// pgtest.Clock is one.
type Clock interface {
	Now() time.Time
	Advance(d time.Duration) time.Time
}

// Run runs the conformance suite against the engine h describes.
func Run(t *testing.T, h Harness) {
	if h.New == nil || len(h.Strategies) == 0 {
		t.Fatal("enginetest: Harness.New and Harness.Strategies are required")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if reason, ok := h.Skip[tc.name]; ok {
				t.Skip(reason)
			}
			tc.fn(t, &h)
		})
	}
}

// tests are the suite's top-level subtests, in the order they run.
var tests = []struct {
	name string
	fn   func(t *testing.T, h *Harness)
}{
	{"Lifecycle", testLifecycle},
	{"ExpiryAndLateClaim", testExpiryAndLateClaim},
	{"LapsedHold", testLapsedHold},
	{"ExtendLifetimeCap", testExtendLifetimeCap},
	{"Carts", testCarts},
	{"CanceledContext", testCanceledContext},
	{"Maintenance", testMaintenance},
	{"BadArgumentsWriteNothing", testBadArgumentsWriteNothing},
	{"ConfiguredBounds", testConfiguredBounds},
	{"StockChanges", testStockChanges},
	{"NotStocked", testNotStocked},
	{"OverCommitted", testOverCommitted},
	{"IdempotentStockChanges", testIdempotentStockChanges},
	{"CheckoutIDsPerShop", testCheckoutIDsPerShop},
	{"ConcurrentIdempotentRetries", testConcurrentIdempotentRetries},
	{"OppositeOrderCarts", testOppositeOrderCarts},
	{"Allocation", testAllocation},
	{"AllocationRaces", testAllocationRaces},
	{"CombinedReservations", testCombinedReservations},
	{"SeedRace", testSeedRace},
	{"RandomizedSchedule", testRandomizedSchedule},
	{"History", testHistory},
	{"HistoryPreorder", testHistoryPreorder},
	{"HistoryDrop", testHistoryDrop}, // history_drop.go: fair drops in the model
	{"Waitlist", testWaitlist},
	{"WaitlistBuyer", testWaitBuyer}, // waitbuyer.go: a granted wait keeps its buyer
	{"Listings", testListings},
	{"Events", testEvents},
	{"EventsBadArguments", testEventsBadArguments},
	{"EventsConcurrentPaging", testEventsConcurrentPaging},
	{"EventsGrouped", testEventsGrouped}, // eventgroups.go
	{"ClaimsCombined", testClaimsCombined},
	{"EditLifecycle", testEditLifecycle}, {"EditEndedHolds", testEditEndedHolds}, {"PartialClaim", testPartialClaim}, {"EditRacesReserves", testEditRacesReserves}, {"EditRacesLifecycle", testEditRacesLifecycle},
	{"BuyerLimitsAndSafety", testBuyerLimitsAndSafety}, // buyer.go
	{"Cross", testCross}, // cross.go: features meeting
	{"StockChangeClaimReason", testStockChangeClaimReason}, {"EditCurrentRevisionContent", testEditCurrentRevisionContent}, {"ListingCursorScope", testListingCursorScope}, // truth.go
	{"PoolExact", testPoolExact}, // pool.go: no second connection inside a transaction
	// stockcas.go: compare-and-set stock changes and imports
	{"StockCAS", testStockCAS}, {"StockImport", testStockImport}, {"StockCASRaces", testStockCASRaces}, {"StockImportRaces", testStockImportRaces},
	{"Availability", testAvailability},               // availability.go
	{"AdminCancelAndAudit", testAdminCancelAndAudit}, // audit.go: issue #30 item 6
	// merge.go: merging a checkout into another
	{"Merge", testMerge}, {"MergeBuyerLimit", testMergeBuyerLimit}, {"MergeExpired", testMergeExpired}, {"MergeIntoWaiting", testMergeIntoWaiting}, {"MergeRaces", testMergeRaces}, {"MergeConcurrent", testMergeConcurrent},
	{"Bundles", testBundles}, // bundle.go: issue #30 item 1
	{"Drops", testDrops},     // drop.go: issue #30 item 7, fair drops
	// history_mergeexpiry.go: a merge while its source's TTL runs out
	{"MergeExpiryRace", testMergeExpiryRace},
	// history_mergeretry.go: one merge sent several times at once
	{"MergeRetryRace", testMergeRetryRace},
	{"Preorders", testPreorders}, // preorder.go: issue #30 item 2
}

// long reports whether the heavier forms of the tests run.
func long() bool { return os.Getenv("HOLDFAST_LONG") != "" }

// forEachStrategy runs fn as a parallel subtest per supported strategy.
func (h *Harness) forEachStrategy(t *testing.T, fn func(t *testing.T, s holdfast.Strategy)) {
	t.Parallel()
	for _, s := range h.Strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			fn(t, s)
		})
	}
}

// env is one engine under test with the suite's helpers. Its final
// invariant check is registered when it is made.
type env struct {
	t *testing.T
	*Instance
	e holdfast.Engine
	// allowOver lets the final invariant check accept over-committed keys,
	// for tests that reduce stock below active holds on purpose.
	allowOver bool
}

// newEnv makes an engine for t through the harness and checks the
// invariant over its whole database when t ends.
func (h *Harness) newEnv(t *testing.T, cfg holdfast.Config, opts Options) *env {
	t.Helper()
	inst := h.New(t, cfg, opts)
	if inst == nil || inst.Engine == nil || inst.Clock == nil {
		t.Fatal("enginetest: Harness.New must return an Engine and its Clock")
	}
	e := &env{t: t, Instance: inst, e: inst.Engine}
	// Registered after the harness's own cleanups, so it runs before them
	// (cleanups run last-in, first-out): the database is still there. It
	// runs after a failure too: a broken invariant explains many failures.
	t.Cleanup(func() { e.checkInvariant(e.allowOver) })
	return e
}

func ctxb() context.Context { return context.Background() }

// checkInvariant fails the test unless the whole database satisfies the
// invariant; over-committed keys are allowed only when allowOver is set.
func (e *env) checkInvariant(allowOver bool) *holdfast.InvariantReport {
	e.t.Helper()
	rep, err := e.e.CheckInvariant(ctxb())
	if err != nil {
		e.t.Fatalf("invariant check: %v", err)
	}
	if !rep.OK() || (!allowOver && len(rep.OverCommitted) > 0) {
		e.t.Fatalf("invariant broken: %s", rep)
	}
	return rep
}

// stock sets k's available stock to n.
func (e *env) stock(k holdfast.Key, n int) *holdfast.Level {
	e.t.Helper()
	l, err := e.e.ChangeStock(ctxb(), holdfast.StockChange{Key: k, Set: &n, Reason: "test stock"})
	if err != nil {
		e.t.Fatalf("set available of %+v to %d: %v", k, n, err)
	}
	return l
}

func (e *env) level(k holdfast.Key) *holdfast.Level {
	e.t.Helper()
	l, err := e.e.Level(ctxb(), k)
	if err != nil {
		e.t.Fatalf("level of %+v: %v", k, err)
	}
	return l
}

func (e *env) hold(shop int64, id uuid.UUID) *holdfast.Hold {
	e.t.Helper()
	h, err := e.e.Hold(ctxb(), shop, id)
	if err != nil {
		e.t.Fatalf("hold %s of shop %d: %v", id, shop, err)
	}
	return h
}

func (e *env) reserve(shop int64, id uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	return e.e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: lines})
}

// mustReserve reserves lines under a new checkout id and returns it.
func (e *env) mustReserve(shop int64, lines []holdfast.Line, ttl time.Duration) uuid.UUID {
	e.t.Helper()
	id := uuid.New()
	h, err := e.e.Reserve(ctxb(), holdfast.ReserveParams{ShopID: shop, CheckoutID: id, Lines: lines, TTL: ttl})
	if err != nil {
		e.t.Fatalf("reserve %+v: %v", lines, err)
	}
	if h.Status != holdfast.StatusHeld || h.Replayed || h.CheckoutID != id || h.ShopID != shop {
		e.t.Fatalf("fresh reserve answered %+v", h)
	}
	return id
}

// sweep advances the clock by d and sweeps; it returns how many holds the
// sweep expired.
func (e *env) sweep(d time.Duration) int {
	e.t.Helper()
	e.Clock.Advance(d)
	n, err := e.e.SweepOnce(ctxb())
	if err != nil {
		e.t.Fatalf("sweep: %v", err)
	}
	return n
}

// sellableChunk is how many units assertSellable holds per reservation:
// small, so a pool key's buffer (at least this big in every test) can
// serve each.
const sellableChunk = 4

// assertSellable checks that exactly want more units of k can be held, by
// holding them a few at a time and then asking for one more, and releases
// what it held. A unit taken from a buffer without becoming a hold (a
// leak) makes this come up short; a unit counted twice makes it go over.
// With Refill it also checks the buffer exactly.
func (e *env) assertSellable(k holdfast.Key, want int) {
	e.t.Helper()
	if e.Refill != nil {
		if err := e.Refill(ctxb()); err != nil {
			e.t.Fatalf("refill: %v", err)
		}
		l := e.level(k)
		buf := max(0, l.Available-l.Safety-l.Held)
		if l.Strategy == holdfast.StrategyPool {
			buf = min(buf, l.PoolCap)
		}
		if l.Pooled != buf {
			e.t.Fatalf("leak: %+v after a refill; pooled should be %d", l, buf)
		}
	}
	if l := e.level(k); l.Sellable != want {
		e.t.Fatalf("sellable: %+v, want %d", l, want)
	}
	var ids []uuid.UUID
	for got := 0; got < want; {
		q := min(want-got, sellableChunk)
		id := uuid.New()
		if _, err := e.reserve(k.ShopID, id, []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: q}}); err != nil {
			e.t.Fatalf("units %d-%d of %d sellable: %v (level %+v)", got+1, got+q, want, err, e.level(k))
		}
		got += q
		ids = append(ids, id)
	}
	if _, err := e.reserve(k.ShopID, uuid.New(), []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}); !errors.Is(err, holdfast.ErrInsufficientStock) {
		e.t.Fatalf("unit %d of %d sellable: %v, want ErrInsufficientStock", want+1, want, err)
	}
	for _, id := range ids {
		if _, err := e.e.Release(ctxb(), k.ShopID, id); err != nil {
			e.t.Fatalf("release: %v", err)
		}
	}
}

// one is a one-line cart of q units of item at location 1.
func one(item int64, q int) []holdfast.Line {
	return []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: q}}
}

func key(shop, item int64) holdfast.Key {
	return holdfast.Key{ShopID: shop, ItemID: item, LocationID: 1}
}
