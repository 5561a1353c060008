package pgshadow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/legacy"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/shadow"
)

// DemoOptions configures Demo. The zero value of every field means its
// default.
type DemoOptions struct {
	// Seed picks the buyers' choices and the crash points. Defaults to 1.
	Seed uint64
	// Units on sale. Defaults to 200.
	Units int
	// Waves of Buyers each (all of a wave at once). Default to 6 and 100:
	// demand is three times the stock, so units given back are sold again.
	Waves, Buyers int
	// CrashPercent of paying buyers' claims crash between the ledger write
	// and the Redis cleanup. Defaults to 5.
	CrashPercent int
	// Shops in the ramp, smallest traffic first. Defaults to 5.
	Shops int
}

func (o DemoOptions) withDefaults() DemoOptions {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Units == 0 {
		o.Units = 200
	}
	if o.Waves == 0 {
		o.Waves = 6
	}
	if o.Buyers == 0 {
		o.Buyers = 100
	}
	if o.CrashPercent == 0 {
		o.CrashPercent = 5
	}
	if o.Shops == 0 {
		o.Shops = 5
	}
	return o
}

// SaleResult is one flash sale with crashes injected.
type SaleResult struct {
	System  string `json:"system"`
	Units   int    `json:"units"`
	Held    int    `json:"held"`
	Sold    int    `json:"sold"`
	Crashed int    `json:"crashed"`
	// Oversold is units sold beyond the stock: a crashed claim's hold
	// stayed in Redis, expired, and its units went back on sale.
	Oversold int `json:"oversold"`
	// NeverDeducted is units sold that the ledger never deducted: it
	// overstates the stock by them, and sells them again once Redis is
	// re-synced from it (the legacy's "oversold: sold, never deducted").
	NeverDeducted int `json:"never_deducted"`
	// Undersold is units deducted from the ledger but still reserved in
	// Redis when the sale ended (the legacy's "undersold: deducted, still
	// reserved"): until the hold expires no buyer can get them — and when it
	// does expire they go back on sale although sold.
	Undersold int `json:"undersold"`
	// LedgerLeft is the ledger's stock after the sale (negative: oversold).
	LedgerLeft int `json:"ledger_left"`
}

// RampStep is the ramp's state after one step.
type RampStep struct {
	Step   string              `json:"step"`
	Shops  []shadow.ShopReport `json:"shops"`
	Detail string              `json:"detail"`
}

// DemoSummary is what Demo measured.
type DemoSummary struct {
	Sales []SaleResult `json:"sales"`
	Ramp  []RampStep   `json:"ramp"`
}

// demoClock is the demo's injected clock: expiry without waiting.
type demoClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *demoClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *demoClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var errDemoCrash = errors.New("demo: injected crash between the ledger write and the Redis cleanup")

// The demo sale's systems.
const (
	saleLedgerFirst = "redis ledger->redis"
	saleRedisFirst  = "redis redis->ledger"
	saleHoldfast    = "holdfast"
)

// demoTTL is the demo's hold TTL: the clock jumps past it between waves.
const demoTTL = 10 * time.Minute

// Demo is `holdfast demo --scenario migration`: the migration story on a
// migrated PostgreSQL database and a Redis server. First a flash sale
// through the legacy Redis design (package legacy/redis) with claims crashing between the ledger
// write and the Redis cleanup at seeded points, and the same sale and crash
// schedule through holdfast; then shops enrolled in the shadow layer go
// legacy → shadow → ramp smallest-first to primary → the kill switch
// reverts one, with agreement reported at each step. Progress lines and a
// summary table go to w. Demo uses fresh shop ids and Redis keys.
func Demo(ctx context.Context, w io.Writer, pool *pgxpool.Pool, rdb goredis.UniversalClient, opts DemoOptions) (*DemoSummary, error) {
	o := opts.withDefaults()
	clock := &demoClock{now: time.Now()}
	base := 1_000_000 + time.Now().UnixNano()%1_000_000*100
	prefix := fmt.Sprintf("holdfast:demo:%d:", base)
	crashes := map[uuid.UUID]bool{}
	var crashMu sync.Mutex
	newStore := func(order lredis.ClaimOrder, p string) (*lredis.Store, error) {
		st, err := lredis.New(rdb, pool, lredis.Config{
			Prefix: p, KeyTemplate: p + "stock:{shop}:{item}:{location}", Now: clock.Now, ClaimOrder: order,
			BetweenSteps: func(_ int64, id uuid.UUID) error {
				crashMu.Lock()
				defer crashMu.Unlock()
				if crashes[id] {
					return errDemoCrash
				}
				return nil
			},
		})
		if err != nil {
			return nil, err
		}
		return st, st.Setup(ctx)
	}
	store, err := newStore(lredis.ClaimLedgerFirst, prefix)
	if err != nil {
		return nil, err
	}
	storeRedisFirst, err := newStore(lredis.ClaimRedisFirst, prefix+"rf:")
	if err != nil {
		return nil, err
	}
	hf, err := postgres.New(pool, holdfast.Config{Now: clock.Now})
	if err != nil {
		return nil, err
	}
	sum := &DemoSummary{}
	fmt.Fprintf(w, "migration demo: %d units, %d waves of %d buyers, %d%% of claims crash between ledger and Redis (seed %d)\n",
		o.Units, o.Waves, o.Buyers, o.CrashPercent, o.Seed)

	// 1. The flash sale, three times: the legacy in each claim order, then
	// holdfast, with the same buyers' choices and crash points.
	for i, sys := range []string{saleLedgerFirst, saleRedisFirst, saleHoldfast} {
		k := holdfast.Key{ShopID: base + int64(i), ItemID: 1, LocationID: 1}
		st := store
		if sys == saleRedisFirst {
			st = storeRedisFirst
		}
		res, err := demoSale(ctx, w, sys, k, o, clock, st, hf, crashes, &crashMu)
		if err != nil {
			return nil, err
		}
		sum.Sales = append(sum.Sales, *res)
	}

	// 2. The ramp.
	sh, err := shadow.New(ctx, NewStore(pool), store, hf, shadow.Config{HoldLifetimeMax: time.Hour, Now: clock.Now})
	if err != nil {
		return nil, err
	}
	crashMu.Lock()
	clear(crashes)
	crashMu.Unlock()
	shops := make([]int64, o.Shops)
	traffic := map[int64]int{}
	for i := range shops {
		shops[i] = base + 10 + int64(i)
		traffic[shops[i]] = 10 << i // 10, 20, 40, …: the last shop is the largest
	}
	if err := sh.Enroll(ctx, shops...); err != nil {
		return nil, err
	}
	for _, s := range shops {
		for item := int64(1); item <= 3; item++ {
			n := 100_000
			if _, err := sh.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: s, ItemID: item, LocationID: 1}, Set: &n, Reason: "demo stock"}); err != nil {
				return nil, err
			}
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 2))
	var live sync.Map // shop -> holds a round left open
	round := func(leaveLive bool) error {
		return demoTraffic(ctx, sh, &live, shops, traffic, rng, leaveLive)
	}
	step := func(name, detail string) error {
		reps, err := sh.Report(ctx)
		if err != nil {
			return err
		}
		var mine []shadow.ShopReport
		for _, r := range reps {
			if traffic[r.ShopID] > 0 {
				mine = append(mine, r)
			}
		}
		sum.Ramp = append(sum.Ramp, RampStep{Step: name, Shops: mine, Detail: detail})
		fmt.Fprintf(w, "[ramp] %-34s", name)
		for _, r := range mine {
			fmt.Fprintf(w, "  %d:%s %s", r.ShopID-base-10+1, short(r.Mode), rate(r))
		}
		fmt.Fprintln(w)
		if detail != "" {
			fmt.Fprintf(w, "       %s\n", detail)
		}
		return nil
	}
	// Legacy traffic, some holds left live: they are the pre-shadow holds.
	if err := round(true); err != nil {
		return nil, err
	}
	if err := step("legacy: traffic on redis only", ""); err != nil {
		return nil, err
	}
	for _, s := range shops {
		if err := sh.SetMode(ctx, s, shadow.ModeShadow, "demo"); err != nil {
			return nil, err
		}
	}
	if err := round(false); err != nil {
		return nil, err
	}
	if err := step("shadow: warming", "pre-shadow holds claimed now are unknown to holdfast: counted as warming, not disagreements"); err != nil {
		return nil, err
	}
	clock.Advance(time.Hour + time.Second)
	if err := round(false); err != nil {
		return nil, err
	}
	if err := step("shadow: warmed, comparing", ""); err != nil {
		return nil, err
	}
	th := shadow.Thresholds{ComparedMin: 20, AgreementMin: 0.99, P99Max: 5 * time.Second, P99RatioMax: 1000, Until: shadow.ModePrimary}
	for {
		p, err := sh.PromoteNext(ctx, th)
		if errors.Is(err, shadow.ErrNothingReady) {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := round(false); err != nil {
			return nil, err
		}
		if err := step(fmt.Sprintf("promote shop %d to primary", p.ShopID-base-10+1),
			fmt.Sprintf("smallest ready shop by traffic (%d ops); holdfast answers it now, redis still written", p.Ops)); err != nil {
			return nil, err
		}
		if allPrimary(sh, shops) {
			break
		}
	}
	largest := shops[len(shops)-1]
	if err := sh.Revert(ctx, largest); err != nil {
		return nil, err
	}
	if err := round(false); err != nil {
		return nil, err
	}
	if err := step(fmt.Sprintf("kill switch: revert shop %d", len(shops)), "back to redis truth at once; its holds made under holdfast truth still claim"); err != nil {
		return nil, err
	}
	if err := sh.Flush(ctx); err != nil {
		return nil, err
	}
	inv, err := hf.CheckInvariant(ctx)
	if err != nil {
		return nil, err
	}

	// Summary.
	fmt.Fprintln(w, "\nsummary: the flash sale with crashes injected between ledger write and Redis cleanup")
	tw := tabwriter.NewWriter(w, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tunits\theld\tsold\tcrashed claims\toversold\tnever deducted\tundersold\tledger left\t")
	for _, s := range sum.Sales {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", s.System, s.Units, s.Held, s.Sold, s.Crashed, s.Oversold, s.NeverDeducted, s.Undersold, s.LedgerLeft)
	}
	tw.Flush()
	fmt.Fprintln(w, "  oversold: sold beyond the stock; never deducted: sold, the ledger still counts them;")
	fmt.Fprintln(w, "  undersold: deducted, still reserved in Redis at the end of the sale")
	fmt.Fprintln(w, "\nsummary: the ramp (final state)")
	tw = tabwriter.NewWriter(w, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shop\tmode\tops\tcompared\tagreement\twarming\tdisagreements\tredis p50/p99\tholdfast p50/p99\t")
	last := sum.Ramp[len(sum.Ramp)-1]
	for _, r := range last.Shops {
		dis := int64(0)
		for _, n := range r.Disagreements {
			dis += n
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.2f%%\t%d\t%d\t%v/%v\t%v/%v\t\n", r.ShopID-base-10+1, r.Mode, r.Ops, r.Compared, 100*r.AgreementRate, r.WarmingOps, dis,
			r.Legacy.P50.Round(10*time.Microsecond), r.Legacy.P99.Round(10*time.Microsecond), r.Holdfast.P50.Round(10*time.Microsecond), r.Holdfast.P99.Round(10*time.Microsecond))
	}
	tw.Flush()
	fmt.Fprintf(w, "holdfast invariant: %s\n", map[bool]string{true: "OK", false: "VIOLATED"}[inv.OK()])
	if !inv.OK() {
		return sum, fmt.Errorf("demo: holdfast invariant violated: %s", inv)
	}
	return sum, nil
}

func short(m shadow.Mode) string { return string(m)[:1] }

func rate(r shadow.ShopReport) string {
	if r.Compared == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*r.AgreementRate)
}

func allPrimary(sh *shadow.Engine, shops []int64) bool {
	for _, s := range shops {
		if m, _ := sh.Mode(s); m != shadow.ModePrimary {
			return false
		}
	}
	return true
}

// demoSale runs the flash sale through one system. Buyers of a wave reserve
// one unit at once; of the holders, 70% pay (claim), 10% fail (release) and
// the rest abandon; CrashPercent of the payers' claims crash after the
// ledger write (legacy) — after the commit for holdfast, where there is no
// step between. Between waves the clock passes the TTL and expiry runs.
func demoSale(ctx context.Context, w io.Writer, sys string, k holdfast.Key, o DemoOptions, clock *demoClock,
	store *lredis.Store, hf *postgres.Client, crashes map[uuid.UUID]bool, crashMu *sync.Mutex) (*SaleResult, error) {
	isLegacy := sys != saleHoldfast
	n := o.Units
	if isLegacy {
		if _, err := store.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "demo"}); err != nil {
			return nil, err
		}
	} else if _, err := hf.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "demo"}); err != nil {
		return nil, err
	}
	reserve := hf.Reserve
	claim, release := hf.Claim, hf.Release
	if isLegacy {
		reserve, claim, release = store.Reserve, store.Claim, store.Release
	}
	rng := rand.New(rand.NewPCG(o.Seed, 1)) // the same schedule for both systems
	res := &SaleResult{System: sys, Units: o.Units}
	var held, sold, crashed atomic.Int64
	var crashedIDs []uuid.UUID
	for wave := range o.Waves {
		type buyer struct {
			id            uuid.UUID
			choice, crash int
		}
		buyers := make([]buyer, o.Buyers)
		for i := range buyers {
			buyers[i] = buyer{id: uuid.New(), choice: rng.IntN(100), crash: rng.IntN(100)}
			if buyers[i].choice < 70 && buyers[i].crash < o.CrashPercent {
				crashMu.Lock()
				crashes[buyers[i].id] = true
				crashMu.Unlock()
				crashedIDs = append(crashedIDs, buyers[i].id)
			}
		}
		var wg sync.WaitGroup
		errc := make(chan error, len(buyers))
		for _, b := range buyers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := reserve(ctx, holdfast.ReserveParams{ShopID: k.ShopID, CheckoutID: b.id, TTL: demoTTL,
					Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}})
				if errors.Is(err, holdfast.ErrInsufficientStock) {
					return
				}
				if err != nil {
					errc <- err
					return
				}
				held.Add(1)
				switch {
				case b.choice < 70:
					_, err := claim(ctx, k.ShopID, b.id)
					crash := b.crash < o.CrashPercent
					switch {
					case crash && (errors.Is(err, errDemoCrash) || err == nil):
						// The legacy died between its two steps; holdfast
						// committed and then the process died.
						sold.Add(1)
						crashed.Add(1)
					case err == nil:
						sold.Add(1)
					default:
						errc <- err
					}
				case b.choice < 80:
					if _, err := release(ctx, k.ShopID, b.id); err != nil {
						errc <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		if err := <-errc; err != nil {
			return nil, fmt.Errorf("demo sale (%s): %w", sys, err)
		}
		if wave < o.Waves-1 {
			clock.Advance(demoTTL + time.Second)
			if isLegacy {
				if _, err := store.ExpireOnce(ctx); err != nil {
					return nil, err
				}
			} else if _, err := hf.SweepOnce(ctx); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(w, "[sale] %-19s wave %d/%d: held %4d  sold %4d  crashed claims %3d\n", sys, wave+1, o.Waves, held.Load(), sold.Load(), crashed.Load())
	}
	res.Held, res.Sold, res.Crashed = int(held.Load()), int(sold.Load()), int(crashed.Load())
	res.Oversold = max(0, res.Sold-res.Units)
	// Deducted but still reserved: crashed claims whose hold is still held.
	for _, id := range crashedIDs {
		var h *holdfast.Hold
		var err error
		if isLegacy {
			h, err = store.Hold(ctx, k.ShopID, id)
		} else {
			h, err = hf.Hold(ctx, k.ShopID, id)
		}
		if errors.Is(err, holdfast.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if h.Status == holdfast.StatusHeld {
			res.Undersold += h.Lines[0].Quantity
		}
	}
	if isLegacy {
		c, err := store.Count(ctx, k)
		if err != nil {
			return nil, err
		}
		res.LedgerLeft = int(c.OnHand)
		res.NeverDeducted = max(0, res.LedgerLeft-(res.Units-res.Sold))
	} else {
		lvl, err := hf.Level(ctx, k)
		if err != nil {
			return nil, err
		}
		res.LedgerLeft = lvl.Available
	}
	fmt.Fprintf(w, "[sale] %-19s done: sold %d of %d units, oversold %d, never deducted %d, undersold %d, ledger left %d\n", sys, res.Sold, res.Units, res.Oversold, res.NeverDeducted, res.Undersold, res.LedgerLeft)
	return res, nil
}

// demoTraffic runs one round of checkouts per shop, shops concurrently,
// each shop's checkouts one after another (per-request outcomes compare
// without two systems racing for the same last unit). leaveLive leaves a
// fifth of the holds open, to be claimed next round.
func demoTraffic(ctx context.Context, sh *shadow.Engine, live *sync.Map, shops []int64, traffic map[int64]int, rng *rand.Rand, leaveLive bool) error {
	plans := map[int64][]demoPlan{}
	for _, s := range shops {
		for range traffic[s] {
			plans[s] = append(plans[s], demoPlan{item: 1 + rng.IntN(3), q: 1 + rng.IntN(2), choice: rng.IntN(100)})
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(shops))
	for _, s := range shops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := demoShop(ctx, sh, live, s, plans[s], leaveLive); err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

type demoPlan struct{ item, q, choice int }

func demoShop(ctx context.Context, sh *shadow.Engine, live *sync.Map, shop int64, plans []demoPlan, leaveLive bool) error {
	if v, ok := live.LoadAndDelete(shop); ok {
		for _, id := range v.([]uuid.UUID) {
			if _, err := sh.Claim(ctx, shop, id); err != nil {
				return fmt.Errorf("demo: claim of a hold left live: %w", err)
			}
		}
	}
	var open []uuid.UUID
	for _, p := range plans {
		id := uuid.New()
		if _, err := sh.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: id, TTL: demoTTL,
			Lines: []holdfast.Line{{ItemID: int64(p.item), LocationID: 1, Quantity: p.q}}}); err != nil {
			return fmt.Errorf("demo: reserve: %w", err)
		}
		var err error
		switch {
		case leaveLive && p.choice < 20:
			open = append(open, id)
		case p.choice < 75:
			_, err = sh.Claim(ctx, shop, id)
		default:
			_, err = sh.Release(ctx, shop, id)
		}
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	if len(open) > 0 {
		live.Store(shop, open)
	}
	return nil
}

var _ legacy.Store = (*lredis.Store)(nil)
