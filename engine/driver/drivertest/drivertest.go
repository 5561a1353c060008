// Package drivertest is the driver-level suite: it pins the contract of
// each operation of engine/driver.Driver, one driver at a time, below the
// behaviour suite (package enginetest) that pins holdfast.Engine. Every
// driver's tests run it (TestDriver), as every River driver runs
// riverdrivertest: a new driver is done when both suites pass.
//
// It calls the driver's operations directly — one attempt in one
// transaction, the way the engine calls them — so it checks what each
// attempt promises on its own: its answers, its sentinels, what it leaves
// committed, and that a savepoint attempt that fails leaves the caller's
// transaction usable.
package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Harness is what a driver's test gives the suite.
type Harness[TTx comparable] struct {
	// New returns a driver on a fresh, migrated, isolated database, with
	// cfg's defaults, an engine on the same client (to set stock and read
	// levels the suite does not test here), and the caller's transactions.
	New func(t *testing.T) *Instance[TTx]
}

// Instance is one driver under test.
type Instance[TTx comparable] struct {
	Driver driver.Driver[TTx]
	Engine holdfast.Engine
	// Begin opens a caller's transaction, as an application would for a
	// …Tx twin; End commits (commit true) or rolls it back.
	Begin func(ctx context.Context) (TTx, error)
	End   func(ctx context.Context, tx TTx, commit bool) error
}

// Run runs the suite against h's driver.
func Run[TTx comparable](t *testing.T, h Harness[TTx]) {
	t.Run("ClassifierNil", func(t *testing.T) { t.Parallel(); testClassifierNil(t, h) })
	t.Run("AttemptCommitsOrRollsBack", func(t *testing.T) { t.Parallel(); testAttempt(t, h) })
	t.Run("SavepointLeavesCallerUsable", func(t *testing.T) { t.Parallel(); testSavepoint(t, h) })
	t.Run("ReserveAttempt", func(t *testing.T) { t.Parallel(); testReserveAttempt(t, h) })
	t.Run("LifecycleAttempts", func(t *testing.T) { t.Parallel(); testLifecycle(t, h) })
	t.Run("ListHoldsReadsOneMore", func(t *testing.T) { t.Parallel(); testListHolds(t, h) })
	t.Run("SweepAttempt", func(t *testing.T) { t.Parallel(); testSweepAttempt(t, h) })
	t.Run("PurgeAttempt", func(t *testing.T) { t.Parallel(); testPurgeAttempt(t, h) })
	t.Run("ReplenishAttempt", func(t *testing.T) { t.Parallel(); testReplenishAttempt(t, h) })
	t.Run("ExpiryProber", func(t *testing.T) { t.Parallel(); testExpiryProber(t, h) })
	t.Run("ChangedKeys", func(t *testing.T) { t.Parallel(); testChangedKeys(t, h) })
	t.Run("BuyerSecretAttempt", func(t *testing.T) { t.Parallel(); testBuyerSecretAttempt(t, h) })
	t.Run("ChangeStockCAS", func(t *testing.T) { t.Parallel(); testChangeStockCAS(t, h) }) // stockcas.go
	t.Run("AllocatePhases", func(t *testing.T) { t.Parallel(); testAllocatePhases(t, h) })
	t.Run("BuyerOf", func(t *testing.T) { t.Parallel(); testBuyerOf(t, h) })
	t.Run("CombinedAttempt", func(t *testing.T) { t.Parallel(); testCombinedAttempt(t, h) })
	t.Run("WaitlistPrimitives", func(t *testing.T) { t.Parallel(); testWaitlistPrimitives(t, h) })
	t.Run("Enqueue", func(t *testing.T) { t.Parallel(); testEnqueue(t, h) })
	t.Run("ReadAvailability", func(t *testing.T) { t.Parallel(); testReadAvailability(t, h) })
	t.Run("AuditAttempts", func(t *testing.T) { t.Parallel(); testAuditAttempts(t, h) })
	t.Run("MergeAttempt", func(t *testing.T) { t.Parallel(); testMergeAttempt(t, h) })     // merge.go
	t.Run("BundleAttempts", func(t *testing.T) { t.Parallel(); testBundleAttempts(t, h) }) // bundle.go
}

var key = holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}

func setStock[TTx comparable](t *testing.T, in *Instance[TTx], k holdfast.Key, n int) {
	t.Helper()
	if _, err := in.Engine.ChangeStock(context.Background(), holdfast.StockChange{Key: k, Set: &n, Reason: "drivertest"}); err != nil {
		t.Fatalf("stock %v: %v", k, err)
	}
}

func reservation(id uuid.UUID, k holdfast.Key, q int) *driver.Reservation {
	lines := []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: q}}
	raw, err := json.Marshal(lines)
	if err != nil {
		panic(err)
	}
	return &driver.Reservation{Shop: k.ShopID, Checkout: id, Lines: lines, LinesRaw: raw, TTL: time.Minute}
}

// reserve runs ReserveAttempt in the driver's own transaction at mode,
// taking the slow modes as the engine does (RefillInline first).
func reserve[TTx comparable](ctx context.Context, in *Instance[TTx], r *driver.Reservation) (*holdfast.Hold, error) {
	var zero TTx
	var h *holdfast.Hold
	var err error
	for level := 0; level <= driver.SlowLevelMax; level++ {
		if level == 1 {
			if err := in.Driver.RefillInline(ctx, r.Shop, r.Lines); err != nil {
				return nil, err
			}
		}
		mode := driver.ModeOf(level, true)
		err = in.Driver.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
			var err error
			h, err = in.Driver.ReserveAttempt(ctx, tx, true, r, mode)
			return err
		})
		if errors.Is(err, driver.ErrRollback) {
			return h, nil
		}
		if !errors.Is(err, driver.ErrSlowPath) {
			return h, err
		}
	}
	return h, err
}

// testClassifierNil: every classifier method takes nil and says nothing
// about it — no retry, no lost connection, no unknown commit.
func testClassifierNil[TTx comparable](t *testing.T, h Harness[TTx]) {
	in := h.New(t)
	d := in.Driver
	if d.Code(nil) != "" || d.Retryable(nil) || d.ConnectionLost(nil) || d.CommitUnacknowledged(nil) || d.Unavailable(nil) || d.CallerTxLost(nil) {
		t.Fatalf("the classifier says something about nil: code %q retryable %v lost %v unacknowledged %v unavailable %v txlost %v",
			d.Code(nil), d.Retryable(nil), d.ConnectionLost(nil), d.CommitUnacknowledged(nil), d.Unavailable(nil), d.CallerTxLost(nil))
	}
	plain := errors.New("not the database's")
	if d.Code(plain) != "" || d.Retryable(plain) || d.CommitUnacknowledged(plain) || d.CallerTxLost(plain) {
		t.Fatalf("the classifier classifies an error that is not the database's")
	}
	// A COMMIT the server answered with an error is not in doubt; a
	// *CommitError of a lost connection is (the drivers' own causes are
	// pinned by their fault tests).
	if d.CommitUnacknowledged(context.Canceled) {
		t.Fatalf("a context error outside COMMIT counts as an unacknowledged commit")
	}
}

// testAttempt: an attempt in the driver's own transaction commits what fn
// did when fn answers nil, and keeps nothing when fn fails.
func testAttempt[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	setStock(t, in, key, 5)
	var zero TTx
	kept, dropped := uuid.New(), uuid.New()
	boom := errors.New("drivertest: fail after the work")
	err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
		_, err := in.Driver.ReserveAttempt(ctx, tx, true, reservation(dropped, key, 1), driver.TakeLocked)
		if err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Attempt whose fn failed: %v, want fn's error as is", err)
	}
	if _, err := reserve(ctx, in, reservation(kept, key, 1)); err != nil {
		t.Fatalf("reserve: %v", err)
	}
	read := func(id uuid.UUID) (*holdfast.Hold, error) {
		var h *holdfast.Hold
		err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteRead, func(tx TTx) error {
			var err error
			h, err = in.Driver.ReadHold(ctx, tx, holdfast.RouteRead, key.ShopID, id)
			return err
		})
		return h, err
	}
	if h, err := read(kept); err != nil || h.Status != holdfast.StatusHeld {
		t.Fatalf("ReadHold of a committed reservation: %+v, %v; want held", h, err)
	}
	if _, err := read(dropped); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("ReadHold of a rolled-back reservation: %v, want ErrNotFound", err)
	}
}

// testSavepoint: an attempt in a caller's transaction that fails leaves
// the transaction usable — the next attempt runs in it — and nothing is
// kept when the caller rolls back.
func testSavepoint[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	setStock(t, in, key, 5)
	tx, err := in.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("drivertest: fail in the savepoint")
	if err := in.Driver.Attempt(ctx, tx, false, holdfast.RouteReserve, func(tx TTx) error {
		if _, err := in.Driver.ReserveAttempt(ctx, tx, false, reservation(uuid.New(), key, 1), driver.TakeLocked); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("savepoint attempt whose fn failed: %v, want fn's error", err)
	}
	id := uuid.New()
	if err := in.Driver.Attempt(ctx, tx, false, holdfast.RouteReserve, func(tx TTx) error {
		_, err := in.Driver.ReserveAttempt(ctx, tx, false, reservation(id, key, 2), driver.TakeLocked)
		return err
	}); err != nil {
		t.Fatalf("an attempt after a failed one in the same caller's transaction: %v, want it usable", err)
	}
	if err := in.End(ctx, tx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Engine.Hold(ctx, key.ShopID, id); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("a hold whose caller rolled back: %v, want ErrNotFound", err)
	}
	if l, err := in.Engine.Level(ctx, key); err != nil || l.Held != 0 {
		t.Fatalf("level after the caller rolled back: %+v, %v; want nothing held", l, err)
	}
}

// testReserveAttempt: a hold for stock that is there; the same checkout
// again is the same hold, Replayed; other lines for it are
// ErrIdempotencyConflict; more than the stock is an
// *InsufficientStockError naming the line and its sellable units.
func testReserveAttempt[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	setStock(t, in, key, 3)
	id := uuid.New()
	first, err := reserve(ctx, in, reservation(id, key, 2))
	if err != nil || first.Status != holdfast.StatusHeld || first.CheckoutID != id || len(first.Lines) != 1 || first.Lines[0].Quantity != 2 {
		t.Fatalf("ReserveAttempt: %+v, %v; want a hold of 2", first, err)
	}
	again, err := reserve(ctx, in, reservation(id, key, 2))
	if err != nil || !again.Replayed || !again.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("ReserveAttempt of the same checkout: %+v, %v; want the same hold, Replayed", again, err)
	}
	if _, err := reserve(ctx, in, reservation(id, key, 1)); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
		t.Fatalf("ReserveAttempt of the checkout with other lines: %v, want ErrIdempotencyConflict", err)
	}
	_, err = reserve(ctx, in, reservation(uuid.New(), key, 2))
	var ise *holdfast.InsufficientStockError
	if !errors.As(err, &ise) || len(ise.Lines) != 1 || ise.Lines[0].ItemID != key.ItemID || ise.Lines[0].Sellable != 1 {
		t.Fatalf("ReserveAttempt beyond the stock: %v, want an InsufficientStockError with 1 sellable", err)
	}
}

// testLifecycle: claim, release and extend attempts answer their
// documented errors and replays.
func testLifecycle[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	setStock(t, in, key, 10)
	var zero TTx
	attempt := func(route string, fn func(tx TTx) (*holdfast.Hold, error)) (*holdfast.Hold, error) {
		var h *holdfast.Hold
		err := in.Driver.Attempt(ctx, zero, true, route, func(tx TTx) error {
			var err error
			h, err = fn(tx)
			return err
		})
		return h, err
	}
	claim := func(id uuid.UUID) (*holdfast.Hold, error) {
		return attempt(holdfast.RouteClaim, func(tx TTx) (*holdfast.Hold, error) {
			return in.Driver.ClaimAttempt(ctx, tx, true, key.ShopID, id)
		})
	}
	release := func(id uuid.UUID) (*holdfast.Hold, error) {
		return attempt(holdfast.RouteRelease, func(tx TTx) (*holdfast.Hold, error) {
			return in.Driver.ReleaseAttempt(ctx, tx, true, key.ShopID, id)
		})
	}
	extend := func(id uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
		return attempt(holdfast.RouteExtend, func(tx TTx) (*holdfast.Hold, error) {
			return in.Driver.ExtendAttempt(ctx, tx, key.ShopID, id, ttl)
		})
	}
	unknown := uuid.New()
	if _, err := claim(unknown); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("ClaimAttempt of no hold: %v, want ErrNotFound", err)
	}
	if _, err := release(unknown); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("ReleaseAttempt of no hold: %v, want ErrNotFound", err)
	}
	if _, err := extend(unknown, time.Minute); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("ExtendAttempt of no hold: %v, want ErrNotFound", err)
	}

	a, b := uuid.New(), uuid.New()
	for _, id := range []uuid.UUID{a, b} {
		if _, err := reserve(ctx, in, reservation(id, key, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if h, err := extend(a, 2*time.Minute); err != nil || h.Status != holdfast.StatusHeld {
		t.Fatalf("ExtendAttempt of a held hold: %+v, %v", h, err)
	}
	if h, err := claim(a); err != nil || h.Status != holdfast.StatusClaimed || h.Replayed || h.EndedAt == nil {
		t.Fatalf("ClaimAttempt: %+v, %v; want claimed, ended", h, err)
	}
	if h, err := claim(a); err != nil || !h.Replayed || h.Status != holdfast.StatusClaimed {
		t.Fatalf("ClaimAttempt again: %+v, %v; want the claimed hold, Replayed", h, err)
	}
	if _, err := release(a); !errors.Is(err, holdfast.ErrHoldClaimed) {
		t.Fatalf("ReleaseAttempt of a claimed hold: %v, want ErrHoldClaimed", err)
	}
	if _, err := extend(a, time.Minute); !errors.Is(err, holdfast.ErrHoldClaimed) {
		t.Fatalf("ExtendAttempt of a claimed hold: %v, want ErrHoldClaimed", err)
	}
	if h, err := release(b); err != nil || h.Status != holdfast.StatusReleased || h.Replayed {
		t.Fatalf("ReleaseAttempt: %+v, %v; want released", h, err)
	}
	if h, err := release(b); err != nil || !h.Replayed {
		t.Fatalf("ReleaseAttempt again: %+v, %v; want Replayed", h, err)
	}
	if _, err := claim(b); !errors.Is(err, holdfast.ErrHoldReleased) {
		t.Fatalf("ClaimAttempt of a released hold: %v, want ErrHoldReleased", err)
	}
	if l, err := in.Engine.Level(ctx, key); err != nil || l.Available != 8 || l.Held != 0 {
		t.Fatalf("level after claiming 2 of 10 and releasing 2: %+v, %v; want 8 available, none held", l, err)
	}
}

// testListHolds: a list read returns at most one hold more than the
// query's limit (the engine trims it into the next page's cursor), newest
// first.
func testListHolds[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	setStock(t, in, key, 10)
	for range 4 {
		if _, err := reserve(ctx, in, reservation(uuid.New(), key, 1)); err != nil {
			t.Fatal(err)
		}
	}
	q, cur, err := holdfast.HoldQuery{ShopID: key.ShopID, Limit: 2}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	var zero TTx
	var holds []holdfast.Hold
	if err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteRead, func(tx TTx) error {
		var err error
		holds, err = in.Driver.ListHolds(ctx, tx, q, cur)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(holds) != 3 {
		t.Fatalf("ListHolds with limit 2 of 4 holds: %d holds, want 3 (one more than the limit)", len(holds))
	}
	for i := 1; i < len(holds); i++ {
		if holds[i].CreatedAt.After(holds[i-1].CreatedAt) {
			t.Fatalf("ListHolds not newest first: %v after %v", holds[i].CreatedAt, holds[i-1].CreatedAt)
		}
	}
}
