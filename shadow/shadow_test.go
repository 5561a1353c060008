package shadow_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/legacy"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/postgres/pgshadow"
	"github.com/holdfast/holdfast/shadow"
)

// race runs the seed race through the layer: buyers at once reserve one
// unit each of a key with units in stock; it returns the held checkouts.
func race(t *testing.T, e holdfast.Engine, k holdfast.Key, buyers, concurrency int) []uuid.UUID {
	t.Helper()
	var mu sync.Mutex
	var held []uuid.UUID
	var wg sync.WaitGroup
	sem := make(chan struct{}, concurrency)
	for range buyers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := uuid.New()
			_, err := e.Reserve(context.Background(), holdfast.ReserveParams{ShopID: k.ShopID, CheckoutID: id,
				Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}})
			switch {
			case err == nil:
				mu.Lock()
				held = append(held, id)
				mu.Unlock()
			case errors.Is(err, holdfast.ErrInsufficientStock):
			default:
				t.Errorf("reserve: %v", err)
			}
		}()
	}
	wg.Wait()
	return held
}

// TestSeedRaceEachMode: 200 buyers race for 50 units through the layer in
// every mode; exactly the stock is held, answered by the truth side, and
// every held checkout claims.
func TestSeedRaceEachMode(t *testing.T) {
	t.Parallel()
	for _, mode := range shadow.Modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 7, ItemID: 1, LocationID: 1}
			if err := r.sh.Enroll(ctx, k.ShopID); err != nil {
				t.Fatal(err)
			}
			r.stock(t, k, 50)
			r.toMode(t, k.ShopID, mode)
			held := race(t, r.sh, k, 200, 32)
			if len(held) != 50 {
				t.Fatalf("mode %s: %d held, want exactly 50", mode, len(held))
			}
			// The truth side holds exactly the stock.
			c, err := r.store.Count(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			lvl, err := r.hf.Level(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			switch mode {
			case shadow.ModeLegacy, shadow.ModeShadow:
				if c.Reservable != 0 || c.OnHand != 50 {
					t.Fatalf("legacy truth: %+v, want reservable 0 of 50", c)
				}
			case shadow.ModePrimary, shadow.ModeHoldfast:
				if lvl.Held != 50 || lvl.Sellable != 0 {
					t.Fatalf("holdfast truth: %+v, want 50 held", lvl)
				}
			}
			if mode == shadow.ModeLegacy && lvl.Held != 0 {
				t.Fatalf("legacy mode wrote holdfast: %+v", lvl)
			}
			if mode == shadow.ModeHoldfast && c.Reservable != 50 {
				t.Fatalf("holdfast mode wrote the legacy: %+v", c)
			}
			for _, id := range held {
				if _, err := r.sh.Claim(ctx, k.ShopID, id); err != nil {
					t.Fatalf("claim %s: %v", id, err)
				}
			}
			lvl, _ = r.sh.Level(ctx, k)
			if lvl.Available != 0 {
				t.Fatalf("after claiming every hold, the truth has %d available", lvl.Available)
			}
			rep := r.report(t, k.ShopID)
			t.Logf("mode %s: %d ops, %d compared, agreement %.3f, disagreements %v", mode, rep.Ops, rep.Compared, rep.AgreementRate, rep.Disagreements)
			if rep.Ops < 250 {
				t.Fatalf("report counted %d ops, want at least 250", rep.Ops)
			}
			r.checkInvariant(t)
		})
	}
}

// buggyStore is the Redis legacy with a planted bug: Release gives every
// unit back twice.
type buggyStore struct {
	*lredis.Store
}

func (b buggyStore) Release(ctx context.Context, shop int64, id uuid.UUID) (*holdfast.Hold, error) {
	h, err := b.Store.Release(ctx, shop, id)
	if err == nil && !h.Replayed {
		for _, l := range h.Lines {
			b.Redis().IncrBy(ctx, b.CounterKey(holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}), int64(l.Quantity))
		}
	}
	return h, err
}

func reserveN(t *testing.T, e holdfast.Engine, k holdfast.Key, n int) (ok, short int, ids []uuid.UUID) {
	t.Helper()
	for range n {
		id := uuid.New()
		_, err := e.Reserve(context.Background(), holdfast.ReserveParams{ShopID: k.ShopID, CheckoutID: id,
			Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}})
		switch {
		case err == nil:
			ok++
			ids = append(ids, id)
		case errors.Is(err, holdfast.ErrInsufficientStock):
			short++
		default:
			t.Fatal(err)
		}
	}
	return ok, short, ids
}

// TestPlantedBugDisagrees: a legacy that gives released units back twice
// holds units holdfast refuses; the layer records exactly those as
// outcome:ok/insufficient_stock disagreements with both answers and the
// request, while the caller still gets the legacy's answer (it is the
// truth in shadow). The same bug while warming is reported as warming.
func TestPlantedBugDisagrees(t *testing.T) {
	t.Parallel()
	for _, warm := range []bool{false, true} {
		t.Run(map[bool]string{false: "ready", true: "warming"}[warm], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, func(s *lredis.Store) shadowStore { return buggyStore{s} })
			ctx := context.Background()
			k := holdfast.Key{ShopID: 3, ItemID: 9, LocationID: 2}
			if err := r.sh.Enroll(ctx, k.ShopID); err != nil {
				t.Fatal(err)
			}
			r.stock(t, k, 5)
			if err := r.sh.SetMode(ctx, k.ShopID, shadow.ModeShadow, "test"); err != nil {
				t.Fatal(err)
			}
			if !warm {
				r.clock.Advance(lifetime + time.Second)
			}
			_, _, ids := reserveN(t, r.sh, k, 5)
			for _, id := range ids {
				if _, err := r.sh.Release(ctx, k.ShopID, id); err != nil {
					t.Fatal(err)
				}
			}
			// Both sides have 5 again; the buggy legacy has 10.
			ok, short, _ := reserveN(t, r.sh, k, 8)
			if ok != 8 || short != 0 {
				t.Fatalf("truth (buggy legacy) answered %d held, %d short; want 8 held", ok, short)
			}
			rep := r.report(t, k.ShopID)
			t.Logf("%+v", rep)
			const kind = "outcome:ok/insufficient_stock"
			if warm {
				if len(rep.Disagreements) != 0 || rep.WarmingOps != 3 {
					t.Fatalf("warming: disagreements %v, warming ops %d; want none and 3", rep.Disagreements, rep.WarmingOps)
				}
				return
			}
			if rep.Disagreements[kind] != 3 || len(rep.Disagreements) != 1 {
				t.Fatalf("disagreements %v, want exactly 3 of %s", rep.Disagreements, kind)
			}
			reg := prometheus.NewRegistry()
			for _, c := range r.sh.Collectors() {
				reg.MustRegister(c)
			}
			if n := testutil.ToFloat64(opsCounter(t, r.sh, "3", shadow.OpReserve, kind)); n != 3 {
				t.Fatalf("metric holdfast_shadow_ops_total{shop=3,op=reserve,kind=%s} = %v, want 3", kind, n)
			}
			if rep.Agreed != 15 || rep.Compared != 18 {
				t.Fatalf("agreed %d of %d compared, want 15 of 18", rep.Agreed, rep.Compared)
			}
			samples, err := r.sh.Samples(ctx, k.ShopID, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(samples) != 3 {
				t.Fatalf("%d samples, want 3", len(samples))
			}
			for _, s := range samples {
				if s.Kind != kind || s.Op != shadow.OpReserve || len(s.Request) == 0 ||
					outcomeOf(t, s.Legacy) != "ok" || outcomeOf(t, s.Holdfast) != "insufficient_stock" {
					t.Fatalf("sample %+v: want both answers and the request", s)
				}
			}
			r.checkInvariant(t)
		})
	}
}

func opsCounter(t *testing.T, e *shadow.Engine, labels ...string) prometheus.Collector {
	t.Helper()
	for _, c := range e.Collectors() {
		if v, ok := c.(*prometheus.CounterVec); ok {
			if m, err := v.GetMetricWithLabelValues(labels...); err == nil {
				return m
			}
		}
	}
	t.Fatal("no ops counter")
	return nil
}

func outcomeOf(t *testing.T, doc []byte) string {
	var a struct{ Outcome string }
	if err := json.Unmarshal(doc, &a); err != nil {
		t.Fatalf("answer %s: %v", doc, err)
	}
	return a.Outcome
}

// TestFlipsUnderLoad: buyers reserve continuously while the shop goes
// legacy → shadow → primary → (kill switch) legacy → shadow → primary.
// Afterwards every acknowledged hold claims on the side that is the truth,
// a retried claim is a replay (nothing doubled), the truth's ledger lost
// exactly the claimed units, and holdfast's invariant holds.
func TestFlipsUnderLoad(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 11, ItemID: 5, LocationID: 1}
	if err := r.sh.Enroll(ctx, k.ShopID); err != nil {
		t.Fatal(err)
	}
	const units = 100_000
	r.stock(t, k, units)

	var mu sync.Mutex
	var acked []uuid.UUID
	var qty atomic.Int64
	progress := make(chan struct{}, 1024)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := uuid.New()
				q := 1 + (w+i)%3
				_, err := r.sh.Reserve(ctx, holdfast.ReserveParams{ShopID: k.ShopID, CheckoutID: id,
					Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: q}}})
				if err != nil {
					t.Errorf("reserve under load: %v", err)
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
				qty.Add(int64(q))
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		}()
	}
	waitHolds := func(n int) {
		for range n {
			select {
			case <-progress:
			case <-time.After(time.Minute):
				t.Fatal("no reservations progressing")
			}
		}
	}
	steps := []shadow.Mode{shadow.ModeShadow, shadow.ModePrimary, shadow.ModeLegacy, shadow.ModeShadow, shadow.ModePrimary}
	for _, m := range steps {
		waitHolds(40)
		if m == shadow.ModePrimary {
			r.clock.Advance(lifetime + time.Second)
		}
		if err := r.sh.SetMode(ctx, k.ShopID, m, "flip under load"); err != nil {
			t.Fatalf("to %s: %v", m, err)
		}
	}
	waitHolds(40)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d holds (%d units) acknowledged across %d flips", len(acked), qty.Load(), len(steps))
	for _, id := range acked {
		h, err := r.sh.Claim(ctx, k.ShopID, id)
		if err != nil {
			t.Fatalf("acknowledged hold %s not claimable after the flips: %v", id, err)
		}
		if h.Replayed {
			t.Fatalf("first claim of %s answered as a replay", id)
		}
	}
	for _, id := range acked[:min(50, len(acked))] {
		h, err := r.sh.Claim(ctx, k.ShopID, id)
		if err != nil || !h.Replayed {
			t.Fatalf("retried claim of %s: %v (replayed %v); want a replay", id, err, h != nil && h.Replayed)
		}
	}
	// The truth (primary: holdfast) lost exactly the claimed units.
	lvl, err := r.hf.Level(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if want := units - int(qty.Load()); lvl.Available != want || lvl.Held != 0 {
		t.Fatalf("holdfast after claims: %+v, want available %d and nothing held", lvl, want)
	}
	// The kill switch now: the legacy, written all along, agrees.
	if _, err := r.sh.RevertAll(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := r.store.Count(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(units) - qty.Load(); c.OnHand != want || c.Reservable != want {
		t.Fatalf("legacy after claims: %+v, want on hand and reservable %d", c, want)
	}
	r.checkInvariant(t)
}

// TestSecondReplicaApplies: a mode change made through one replica is
// applied by a second replica on the same database by its poll; the test
// waits on the change.
func TestSecondReplicaApplies(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	if err := r.sh.Enroll(ctx, 21); err != nil {
		t.Fatal(err)
	}
	b, err := shadow.New(ctx, pgshadow.NewStore(r.db.Pool), r.store, r.hf, shadow.Config{HoldLifetimeMax: lifetime})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(ctx)
	defer b.Stop(ctx)
	if m, _ := b.Mode(21); m != shadow.ModeLegacy {
		t.Fatalf("replica b sees %q", m)
	}
	start := time.Now()
	if err := r.sh.SetMode(ctx, 21, shadow.ModeShadow, "test"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a generous bound for a busy machine
	defer cancel()
	if err := b.WaitMode(wctx, 21, shadow.ModeShadow); err != nil {
		t.Fatal(err)
	}
	t.Logf("replica b applied the change %v after it committed (poll interval %v)", time.Since(start), shadow.PollIntervalDefault)
	if err := r.sh.Revert(ctx, 21); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitMode(wctx, 21, shadow.ModeLegacy); err != nil {
		t.Fatal(err)
	}
}

// TestBadInputChangesNothing: unknown shop, unknown mode and skipping a
// mode are typed errors and leave every mode as it was.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx := context.Background()
	if err := r.sh.Enroll(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := r.sh.SetMode(ctx, 2, shadow.ModeShadow, "test"); err != nil {
		t.Fatal(err)
	}
	before := r.sh.ShopModes()
	cases := []struct {
		name string
		err  error
		call func() error
	}{
		{"unknown shop", shadow.ErrUnknownShop, func() error { return r.sh.SetMode(ctx, 99, shadow.ModeShadow, "") }},
		{"unknown shop promote", shadow.ErrUnknownShop, func() error { _, err := r.sh.Promote(ctx, 99); return err }},
		{"unknown shop revert", shadow.ErrUnknownShop, func() error { return r.sh.Revert(ctx, 99) }},
		{"unknown shop reconcile", shadow.ErrUnknownShop, func() error { _, err := r.sh.Reconcile(ctx, 99); return err }},
		{"unknown mode", shadow.ErrUnknownMode, func() error { return r.sh.SetMode(ctx, 1, shadow.Mode("turbo"), "") }},
		{"parse unknown mode", shadow.ErrUnknownMode, func() error { _, err := shadow.ParseMode("turbo"); return err }},
		{"skip shadow", shadow.ErrSkippedMode, func() error { return r.sh.SetMode(ctx, 1, shadow.ModePrimary, "") }},
		{"skip to holdfast", shadow.ErrSkippedMode, func() error { return r.sh.SetMode(ctx, 1, shadow.ModeHoldfast, "") }},
		{"skip primary", shadow.ErrSkippedMode, func() error { return r.sh.SetMode(ctx, 2, shadow.ModeHoldfast, "") }},
		{"primary while warming", shadow.ErrWarming, func() error { return r.sh.SetMode(ctx, 2, shadow.ModePrimary, "") }},
	}
	for _, c := range cases {
		err := c.call()
		if !errors.Is(err, c.err) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.err)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
	after := r.sh.ShopModes()
	if len(before) != len(after) {
		t.Fatalf("modes changed: %v -> %v", before, after)
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("modes changed: %v -> %v", before, after)
		}
	}
	var changes int
	if err := r.db.Pool.QueryRow(ctx, "SELECT count(*) FROM holdfast_shadow_mode_changes").Scan(&changes); err != nil {
		t.Fatal(err)
	}
	if changes != 1 {
		t.Fatalf("%d mode changes recorded, want 1 (the legitimate one)", changes)
	}
}

// lostStockStore is the Redis legacy whose stock changes fail as a lost
// connection does, after holdfast has applied them.
type lostStockStore struct {
	*lredis.Store
}

func (s lostStockStore) ChangeStock(ctx context.Context, ch holdfast.StockChange) (legacy.Count, error) {
	return legacy.Count{}, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

// TestStockChangeHalfApplied: a stock change holdfast applied and the
// legacy failed (its connection lost) is an unknown outcome, never the
// retryable "unavailable" a bare connection error means to the API: a
// blind retry would apply it to holdfast twice.
func TestStockChangeHalfApplied(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(s *lredis.Store) shadowStore { return lostStockStore{s} })
	ctx := context.Background()
	k := holdfast.Key{ShopID: 4, ItemID: 1, LocationID: 1}
	if err := r.sh.Enroll(ctx, k.ShopID); err != nil {
		t.Fatal(err)
	}
	_, err := r.sh.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 5, Reason: "receive"})
	if !errors.Is(err, holdfast.ErrOutcomeUnknown) {
		t.Fatalf("half-applied stock change answered %v, want ErrOutcomeUnknown", err)
	}
	if lvl, lerr := r.hf.Level(ctx, k); lerr != nil || lvl.Available != 5 {
		t.Fatalf("holdfast's level: %+v %v, want the change applied", lvl, lerr)
	}
}
