package pgops_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func fixedSnapshot() *pgops.Snapshot {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &pgops.Snapshot{
		At: at, Database: "shop", Window: time.Second,
		HoldsPerSecond: 412, ActiveHolds: 1830, Claimed: 350, Released: 20, Expired: 3,
		CommitsPerSecond: 1210.5, RollbacksPerSecond: 4, Deadlocks: 0,
		OldestXact: 1500 * time.Millisecond, IdleInTransaction: 1,
		Waits: []pgops.WaitCount{{Type: "Lock", Event: "advisory", Sessions: 2}, {Type: "LWLock", Event: "WALWrite", Sessions: 1}},
		Callers: []pgops.CallerRow{
			{Caller: pgops.Caller{Application: "holdfast-serve", Route: "reserve", State: "active"}, Sessions: 6, Seconds: 5230},
			{Caller: pgops.Caller{Application: "checkout-web", Route: "claim", Tag: "payment-callback", State: "idle in transaction"}, Sessions: 1, Seconds: 1875.5},
			{Caller: pgops.Caller{Application: "holdfast-serve", Route: "none", State: "idle"}, Sessions: 12, Seconds: 960},
		},
		Tables: []pgops.TableStat{
			{Table: "reservation_units_p0", Live: 12000, Dead: 300, DeadPercent: 2.4390243902439024, AutovacuumCount: 41, LastAutovacuum: at.Add(-12 * time.Second)},
			{Table: "reservation_units_p1", Live: 9000, Dead: 4000, DeadPercent: 30.76923076923077, AutovacuumCount: 2, LastAutovacuum: at.Add(-7 * time.Minute), AboveSince: at.Add(-2 * time.Minute)},
			{Table: "reservation_units_p2", Live: 8000, Dead: 9000, DeadPercent: 52.94117647058823, AutovacuumCount: 0, Alert: true, AboveSince: at.Add(-9 * time.Minute)},
			{Table: "reservation_units_p3"},
			{Table: "reservation_units_p4"},
			{Table: "holds", Live: 2000000, Dead: 1200, DeadPercent: 0.06, AutovacuumCount: 90, LastAutovacuum: at.Add(-time.Minute)},
		},
		FrozenXIDAge: 150000000, XminHorizonAge: 42,
		HotKeys: []pgops.KeyFill{
			{Key: holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 7}, Strategy: holdfast.StrategyPool, PoolCap: 1000, Available: 5000, Held: 800, Pooled: 640, Activity: 412},
			{Key: holdfast.Key{ShopID: 2, ItemID: 9, LocationID: 1}, Strategy: holdfast.StrategyBatch, Available: 100, Held: 40, Pooled: 60, Activity: 35},
		},
		Pool: pgops.PoolFill{Keys: 3, Low: 1, Empty: 0, Pooled: 2100, Wanted: 3000},
	}
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	got := pgops.Render(fixedSnapshot())
	path := filepath.Join("testdata", "top.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("Render differs from %s (go test -run TestRenderGolden -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
	// The first frame has no rates yet.
	s := fixedSnapshot()
	s.Window = 0
	if first := pgops.Render(s); !strings.Contains(first, "new/s –") || !strings.Contains(first, "ended: –") || !strings.Contains(first, "MOST HELD KEYS") {
		t.Fatalf("first frame shows rates, or ranks by activity:\n%s", first)
	}
	// Empty partitions are summarised, not listed; fill only for pool keys.
	for _, want := range []string{"(2 reservation_units partitions without rows not shown)", "reservation_units_p2"} {
		if !strings.Contains(got, want) {
			t.Fatalf("frame lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "reservation_units_p3") {
		t.Fatalf("frame lists an empty partition:\n%s", got)
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "2/9/1") && (strings.Contains(l, "%") || !strings.HasSuffix(l, "–")) {
			t.Fatalf("a batch key shows a fill: %q", l)
		}
	}
}

// TestTopCollect collects two frames around some reservations.
func TestTopCollect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	hot := holdfast.Key{ShopID: 5, ItemID: 77, LocationID: 2}
	if _, err := c.SetAvailable(ctx, hot, 100, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	reserve := func(q int) uuid.UUID {
		id := uuid.New()
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 5, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 77, LocationID: 2, Quantity: q}}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	// A cold key with more units held than the hot key gets: held before
	// top starts, untouched after.
	cold := holdfast.Key{ShopID: 5, ItemID: 78, LocationID: 2}
	if _, err := c.SetAvailable(ctx, cold, 100, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 5, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 78, LocationID: 2, Quantity: 40}}}); err != nil {
		t.Fatal(err)
	}
	first := reserve(3)
	web := connect(t, db, "shop-web")
	exec(t, web, "/* app='shop',route='cart' */ SELECT 1")
	top := pgops.NewTop(db.Pool, c.Config(), time.Second)
	s1, err := top.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Window != 0 || s1.ActiveHolds != 2 || s1.Database != db.Name || len(s1.Tables) != 19 {
		t.Fatalf("first frame: %+v", s1)
	}
	// The first frame has no window: keys by units held, the cold first.
	if len(s1.HotKeys) != 2 || s1.HotKeys[0].Key != cold || s1.HotKeys[1].Key != hot {
		t.Fatalf("first frame keys: %+v", s1.HotKeys)
	}
	reserve(2)
	if _, err := c.Claim(ctx, 5, first); err != nil {
		t.Fatal(err)
	}
	s2, err := top.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Window <= 0 || s2.ActiveHolds != 2 || s2.Claimed != 1 || s2.Released != 0 {
		t.Fatalf("second frame: %+v", s2)
	}
	// By recent activity: 2 units reserved and 3 claimed on the hot key;
	// the cold key, with more held, moved nothing. Its strategy is the
	// client's default (batch), not a guess.
	if len(s2.HotKeys) != 1 || s2.HotKeys[0].Key != hot || s2.HotKeys[0].Activity != 5 || s2.HotKeys[0].Held != 2 ||
		s2.HotKeys[0].Available != 97 || s2.HotKeys[0].Strategy != c.Config().Strategy {
		t.Fatalf("hot keys: %+v", s2.HotKeys)
	}
	if len(s2.Callers) != 1 || s2.Callers[0].Application != "shop-web" || s2.Callers[0].State != "idle" || s2.Callers[0].Seconds != 2 {
		t.Fatalf("callers: %+v", s2.Callers)
	}
	out := pgops.Render(s2)
	for _, want := range []string{"database " + db.Name, "5/77/2", "HOTTEST KEYS", "claimed 1", "partitions without rows not shown", "inventory_counters"} {
		if !strings.Contains(out, want) {
			t.Fatalf("frame lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "reservation_units_p15") || strings.Contains(out, "5/78/2") {
		t.Fatalf("frame lists an empty partition or the cold key:\n%s", out)
	}
	if testing.Verbose() {
		t.Log("\n" + out)
	}
}

// TestKeyDefaultsAreTheClients: a key without an override shows the
// strategy the client really runs it with, whether top is given the
// client's configuration or none.
func TestKeyDefaultsAreTheClients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 2)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	key := holdfast.Key{ShopID: 9, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, key, 10, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 9, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	lvl, err := c.Level(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]holdfast.Config{"client's": c.Config(), "empty": {}} {
		keys, err := pgops.HotKeys(ctx, db.Pool, cfg, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || keys[0].Strategy != c.Config().Strategy || keys[0].Strategy != lvl.Strategy {
			t.Fatalf("%s config: %+v; the client runs %s, Level says %s", name, keys, c.Config().Strategy, lvl.Strategy)
		}
	}
}
