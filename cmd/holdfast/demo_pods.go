package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/acklog"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/postgres"
	migrate "github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/postgres/pgmove"
	"github.com/holdfast/holdfast/postgres/podmap"
)

// scenarioPods is demo --scenario pods: three pods on private PostgreSQL
// clusters, thirty shops over them, a flash sale on one shop, which is
// moved to another pod mid-sale (#28).
const scenarioPods = "pods"

// Shape and bounds of the pods demo.
const (
	// podsDemoShops are the shops placed over the pods (1 is the sale's).
	podsDemoShops = 30
	// podsDemoSaleShop is the shop on sale, placed first (on pod a).
	podsDemoSaleShop = 1
	// podsDemoBackground are the workers trading on the other shops
	// (reserve, then release) from before the sale to its end.
	podsDemoBackground = 4
	// podsDemoOtherStock is each other shop's stock.
	podsDemoOtherStock = 1_000_000
	// movesMax bounds --moves.
	movesMax = 5
	// podsDemoRetryMax bounds how long a buyer retries one operation
	// answered unavailable or outcome_unknown (same checkout id).
	podsDemoRetryMax = 30 * time.Second
	// podsDemoOpTimeout bounds one attempt, as a service's request
	// timeout would.
	podsDemoOpTimeout = 10 * time.Second
	// podsDemoPurgeDelay: the demo's router is the only one and drops
	// its cached placement at the switch, so the source's rows can go
	// soon.
	podsDemoPurgeDelay = 300 * time.Millisecond
	// podsDemoWarmup: the other shops trade alone this long before the
	// first move starts (their p99 "before").
	podsDemoWarmup = time.Second
	// podsDemoExpireMax bounds the wait for the abandoned holds to expire
	// after the sale (past --ttl).
	podsDemoExpireMax = 30 * time.Second
)

// The pods demo's defaults where the flash sale's would be too long for
// three clusters on one machine (a flag the user sets wins).
const (
	podsDemoBuyers      = 1000
	podsDemoUnits       = 400
	podsDemoConcurrency = 16
)

// podsDemoNames are the pods; the control database is beside the first.
var podsDemoNames = []string{"a", "b", "c"}

// runPodsDemo starts three private PostgreSQL clusters (a pod on each, the
// control database beside pod a), places thirty shops over them through a
// router, runs a flash sale on shop 1 while workers trade on the other
// shops, moves shop 1 to pod b mid-sale (pods.Move; --moves > 1 moves it
// back and forth), and checks afterwards every acknowledged answer against
// the rows of the pod the shop ended on.
func runPodsDemo(ctx context.Context, w io.Writer, f *demoFlags) error {
	switch {
	case f.buyers < 1 || f.buyers > 1_000_000:
		return usageError("--buyers must be between 1 and 1000000")
	case f.units < 0 || f.units > 10_000_000:
		return usageError("--units must be between 0 and 10000000")
	case f.concurrency < 1 || f.concurrency > 256:
		return usageError("--concurrency must be between 1 and 256")
	case f.payRate < 0 || f.failRate < 0 || f.payRate+f.failRate > 1:
		return usageError("--pay and --fail must be shares that add up to at most 1")
	case !holdfast.Strategy(f.strategy).Valid():
		return usageError("--strategy must be %s", strategyNames())
	case f.ttl < time.Second || f.ttl > time.Hour:
		return usageError("--ttl must be between 1s and 1h")
	case f.moves < 1 || f.moves > movesMax:
		return usageError("--moves must be between 1 and %d", movesMax)
	}
	setupStart := time.Now()
	stderrf("starting three private PostgreSQL clusters (a pod on each, the control database beside pod a)...")
	clusters := make([]*pgcluster.Cluster, len(podsDemoNames))
	errs := make([]error, len(podsDemoNames))
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clusters[i], errs[i] = pgcluster.Start(ctx, pgcluster.Options{Logical: true})
		}()
	}
	wg.Wait()
	for _, c := range clusters {
		if c != nil {
			defer c.Stop(context.Background()) //nolint:errcheck
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	conns := f.concurrency + podsDemoBackground + 8
	control, err := podsDemoDatabase(ctx, clusters[0], "holdfast_control", 4)
	if err != nil {
		return fmt.Errorf("control database: %w", err)
	}
	defer control.Close()
	if _, err := podmap.Migrate(ctx, control); err != nil {
		return fmt.Errorf("control database: %w", err)
	}
	m := podmap.New(control)
	// Holds left to expire are swept soon after their TTL. The pods'
	// maintenance batches that include the fenced shop fail during the
	// move and run again at their next tick: warnings, not shown.
	ec := holdfast.Config{SweepInterval: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	engines := map[string]*postgres.Client{}
	stores := map[string]pods.MoveStore{}
	var list []pods.Pod
	for i, name := range podsDemoNames {
		pool, err := podsDemoDatabase(ctx, clusters[i], "pod_"+name, conns)
		if err != nil {
			return fmt.Errorf("pod %s: %w", name, err)
		}
		defer pool.Close()
		if _, err := migrate.Up(ctx, pool); err != nil {
			return fmt.Errorf("pod %s: %w", name, err)
		}
		eng, err := postgres.New(pool, ec)
		if err != nil {
			return fmt.Errorf("pod %s: %w", name, err)
		}
		engines[name] = eng
		stores[name] = pgmove.New(pool)
		list = append(list, pods.Pod{Name: name, Engine: eng, Ping: pool.Ping})
	}
	r, err := pods.New(ctx, m, list, pods.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	r.Start(ctx)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Stop(sctx)
	}()

	// The shops, placed by the router's policy (least loaded by shop
	// count, ties by name) at their first stock change: shop 1 on a.
	shop := int64(podsDemoSaleShop)
	key := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
	if _, err := r.SetStrategy(ctx, key, holdfast.Strategy(f.strategy), 0); err != nil {
		return err
	}
	for s := int64(1); s <= podsDemoShops; s++ {
		n := podsDemoOtherStock
		if s == shop {
			n = f.units
		}
		if _, err := r.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: s, ItemID: 1, LocationID: 1}, Set: &n, Reason: "demo: stock"}); err != nil {
			return fmt.Errorf("shop %d: %w", s, err)
		}
	}
	from, err := m.Lookup(ctx, shop)
	if err != nil {
		return err
	}
	infos, err := m.Pods(ctx)
	if err != nil {
		return err
	}
	to := "b"
	if from.Pod == to {
		to = "a"
	}
	fmt.Fprintf(w, "pods:")
	for _, p := range infos {
		fmt.Fprintf(w, " %s (%d shops)", p.Name, p.Shops)
	}
	fmt.Fprintf(w, ", ready in %v\n", time.Since(setupStart).Round(100*time.Millisecond))
	fmt.Fprintf(w, "flash sale on shop %d (pod %s): %d buyers, %d units, %d at once, strategy %s; moved to pod %s mid-sale (%d move(s)); %d workers trade on the other %d shops\n",
		shop, from.Pod, f.buyers, f.units, f.concurrency, f.strategy, to, f.moves, podsDemoBackground, podsDemoShops-1)

	// Steady traffic on the other shops: latencies by start time.
	bg := &podsBackground{r: r}
	bgCtx, stopBG := context.WithCancel(ctx)
	var bgWG sync.WaitGroup
	for i := range podsDemoBackground {
		bgWG.Add(1)
		go func() {
			defer bgWG.Done()
			bg.run(bgCtx, uint64(i))
		}()
	}
	defer func() { stopBG(); bgWG.Wait() }()

	sale := &podsSale{r: r, shop: shop, ttl: f.ttl, log: &acklog.Log{}}
	trafficStart := time.Now()
	work := make(chan int)
	var done atomic.Int64
	var buyers sync.WaitGroup
	for range f.concurrency {
		buyers.Add(1)
		go func() {
			defer buyers.Done()
			for range work {
				sale.buy(ctx, f.payRate, f.failRate)
				done.Add(1)
			}
		}()
	}
	// The mover: each move once another share of the buyers is through
	// (mid-sale), a → b, then back and forth.
	var (
		reports []*pods.MoveReport
		windows [][2]time.Time // each move, from its call to its return
		fences  [][2]time.Time // each move's fence, from its call
		atBuyer []int64        // buyers through when each move began
		moving  atomic.Bool
	)
	moveErr := make(chan error, 1)
	// The sale opens once the first move is ready to fence (a streamed
	// move has copied the shop by then and streams its changes), so each
	// fence lands mid-sale however long the copy takes.
	ready := make(chan struct{})
	var readyOnce sync.Once
	setReady := func() { readyOnce.Do(func() { close(ready) }) }
	go func() {
		defer close(moveErr)
		defer setReady()
		// The other shops trade alone a moment first: their "before".
		select {
		case <-ctx.Done():
		case <-time.After(podsDemoWarmup):
		}
		dst, src := to, from.Pod
		for i := range f.moves {
			// Each move starts at once (the first after the warm-up) and
			// fences when the sale is at its threshold.
			threshold := int64(f.buyers) * int64(i+1) / int64(f.moves+2)
			var at int64
			var f0 time.Time
			beforeFence := func(ctx context.Context) error {
				setReady()
				for done.Load() < threshold && ctx.Err() == nil {
					time.Sleep(10 * time.Millisecond)
				}
				at, f0 = done.Load(), time.Now()
				return ctx.Err()
			}
			moving.Store(true)
			t0 := time.Now()
			rep, err := pods.Move(ctx, pods.MoveParams{ShopID: shop, To: dst, Stores: stores, Router: r,
				PurgeDelay: podsDemoPurgeDelay, BeforeFence: beforeFence, Logger: slog.New(slog.DiscardHandler)})
			t1 := time.Now()
			moving.Store(false)
			if err != nil {
				moveErr <- fmt.Errorf("move %d of shop %d to %s: %w", i+1, shop, dst, err)
				return
			}
			sale.mu.Lock()
			reports = append(reports, rep)
			windows = append(windows, [2]time.Time{t0, t1})
			fences = append(fences, [2]time.Time{f0, f0.Add(rep.Fence)})
			atBuyer = append(atBuyer, at)
			sale.mu.Unlock()
			step := "copy"
			if rep.Method == pods.MethodStream {
				step = "catch-up"
			}
			stderrf("moved shop %d from %s to %s (%s, %d ms before the fence): %d rows, fence %d ms (wait %d, %s %d, verify %d, switch %d), purged %d",
				shop, rep.From, rep.To, rep.Method, rep.Stream.Milliseconds(), rep.Rows, rep.Fence.Milliseconds(), rep.FenceWait.Milliseconds(),
				step, rep.Copy.Milliseconds(), rep.Verify.Milliseconds(), rep.Switch.Milliseconds(), rep.Purged)
			dst, src = src, dst
		}
	}()
	stopProgress := progress(func() string {
		sale.mu.Lock()
		moved := len(reports)
		sale.mu.Unlock()
		state := fmt.Sprintf("moved %d/%d", moved, f.moves)
		if moving.Load() {
			state = "moving"
		}
		return fmt.Sprintf("buyers %d/%d  held %d  claimed %d  released %d  sold out %d  retried %d  %s  other shops %d ops",
			done.Load(), f.buyers, sale.held.Load(), sale.claimed.Load(), sale.released.Load(), sale.soldOut.Load(),
			sale.retries.Load(), state, bg.ops.Load())
	})
	select {
	case <-ready:
	case <-ctx.Done():
	}
	saleStart := time.Now()
feed:
	for i := range f.buyers {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	buyers.Wait()
	stopProgress()
	saleTime := time.Since(saleStart)
	if err := <-moveErr; err != nil {
		return err
	}
	stopBG()
	bgWG.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}

	// The shop's pod now, by the map; the answers are checked against its
	// engine directly, not through the router.
	final, err := m.Lookup(ctx, shop)
	if err != nil {
		return err
	}
	target := engines[final.Pod]
	// The abandoned holds expire after --ttl: wait for the target's
	// sweeper (nudged) to expire them.
	if n := sale.abandoned.Load(); n > 0 {
		stderrf("waiting for %d abandoned holds to expire (--ttl %v) on pod %s...", n, f.ttl, final.Pod)
		deadline := time.Now().Add(f.ttl + podsDemoExpireMax)
		for {
			if _, err := target.SweepOnce(ctx); err != nil {
				return err
			}
			p, err := target.Holds(ctx, holdfast.HoldQuery{ShopID: shop, Status: holdfast.StatusHeld, Limit: 1})
			if err != nil {
				return err
			}
			if len(p.Holds) == 0 {
				break
			}
			if time.Now().After(deadline) {
				stderrf("abandoned holds still held after %v", f.ttl+podsDemoExpireMax)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	res, err := acklog.Check(ctx, target, key, f.units, sale.log)
	if err != nil {
		return err
	}
	for _, p := range res.Problems {
		stderrf("%s", p)
	}
	lvl, err := target.Level(ctx, key)
	if err != nil {
		return err
	}
	// The invariant over every pod (merged), and the shop's own key.
	rep, err := r.CheckInvariant(ctx)
	if err != nil {
		return err
	}
	oversold := max(0, res.Claimed-f.units) + max(0, lvl.Held+lvl.Pooled-lvl.Available)
	for _, v := range rep.Violations {
		if v.Key == key {
			oversold += int(max(0, v.Held+v.Pooled-v.Available))
		}
	}
	// The source keeps nothing of the shop but its tombstone.
	var left []string
	for name, st := range stores {
		if name == final.Pod {
			continue
		}
		if s, err := st.FenceState(ctx, shop); err == nil && s != pods.FenceNone && s != pods.FenceGone {
			left = append(left, name+": "+s)
		}
		if p, err := engines[name].Holds(ctx, holdfast.HoldQuery{ShopID: shop, Limit: 1}); err != nil {
			return err
		} else if len(p.Holds) > 0 {
			left = append(left, name+": holds left")
		}
	}
	slices.Sort(left)

	// Fences, and the other shops' latencies before the first move and
	// during the moves.
	var fenceMax time.Duration
	for _, rp := range reports {
		fenceMax = max(fenceMax, rp.Fence)
	}
	before, during := bg.split(trafficStart, windows)
	waited, longest := sale.fenced(fences)

	fmt.Fprintf(w, "\nsummary (sale %v)\n", saleTime.Round(time.Millisecond))
	fmt.Fprintf(w, "  held           %6d  (reservations acknowledged)\n", sale.held.Load())
	fmt.Fprintf(w, "  claimed        %6d  (paid: permanently deducted)\n", sale.claimed.Load())
	fmt.Fprintf(w, "  released       %6d  (payment failed: units back)\n", sale.released.Load())
	fmt.Fprintf(w, "  abandoned      %6d  (left to expire; %d expired on pod %s)\n", sale.abandoned.Load(), res.Holds[holdfast.StatusExpired], final.Pod)
	fmt.Fprintf(w, "  out of stock   %6d  (answered sold out)\n", sale.soldOut.Load())
	fmt.Fprintf(w, "  retried        %6d  (answers unavailable or outcome_unknown during the fence, retried with the same checkout id)\n", sale.retries.Load())
	fmt.Fprintf(w, "  gave up        %6d\n", sale.gaveUp.Load())
	for i, rp := range reports {
		step := "copy"
		if rp.Method == pods.MethodStream {
			step = "catch-up"
		}
		fmt.Fprintf(w, "  move %d         %s → %s, %s (%d ms before the fence), fenced after %d of %d buyers: %d rows, fence %d ms (wait %d, %s %d, verify %d, switch %d), purged %d\n",
			i+1, rp.From, rp.To, rp.Method, rp.Stream.Milliseconds(), atBuyer[i], f.buyers, rp.Rows, rp.Fence.Milliseconds(), rp.FenceWait.Milliseconds(),
			step, rp.Copy.Milliseconds(), rp.Verify.Milliseconds(), rp.Switch.Milliseconds(), rp.Purged)
	}
	fmt.Fprintf(w, "  fenced calls   %6d  (calls of the sale in flight during a fence: they waited, longest %d ms)\n", waited, longest.Milliseconds())
	fmt.Fprintf(w, "  checked        %d acknowledged answers against pod %s's rows (%d unknown, not judged); claim ledger %d units\n",
		res.Acked, final.Pod, res.Unknown, res.Claimed)
	fmt.Fprintf(w, "  other shops    %d operations before the move, %d during, %d errors\n", len(before), len(during), bg.errors.Load())
	fmt.Fprintf(w, "  stock now      available %d, held %d, pooled %d, sellable %d\n", lvl.Available, lvl.Held, lvl.Pooled, lvl.Sellable)
	okInv := rep.OK() && len(left) == 0
	if okInv {
		fmt.Fprintf(w, "  invariant      OK on all %d pods: pooled + held <= available on all %d keys; shop %d: available = %d - %d claimed\n",
			len(podsDemoNames), rep.Keys, shop, f.units, res.Claimed)
	} else {
		fmt.Fprintf(w, "  invariant      BROKEN: %s; left on other pods: %v\n", rep, left)
	}
	fmt.Fprintf(w, "moved shop %d\n", shop)
	fmt.Fprintf(w, "acknowledged lost %d\n", res.Lost)
	fmt.Fprintf(w, "applied twice %d\n", res.Twice)
	fmt.Fprintf(w, "oversold %d\n", oversold)
	fmt.Fprintf(w, "fence max %d ms\n", fenceMax.Milliseconds())
	fmt.Fprintf(w, "other shops p99 %.1f ms (before %.1f ms)\n", p99ms(during), p99ms(before))
	if res.Lost > 0 || res.Twice > 0 || oversold > 0 || !okInv || sale.gaveUp.Load() > 0 || final.Pod == from.Pod && f.moves%2 == 1 {
		return &exitError{code: 1, msg: "the move lost or doubled acknowledged work, oversold, broke the invariant, or a buyer never got a definite answer"}
	}
	return nil
}

// podsDemoDatabase creates database name on c and opens a pool of conns
// on it.
func podsDemoDatabase(ctx context.Context, c *pgcluster.Cluster, name string, conns int) (*pgxpool.Pool, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return nil, err
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	conn.Close(ctx)
	if err != nil {
		return nil, err
	}
	return pgPool(ctx, c.URL(name), conns, "holdfast-demo-"+name)
}

// p99ms is the 99th percentile of ds in milliseconds (0 when empty).
func p99ms(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, len(ds)*99/100)].Microseconds()) / 1000
}

// podsBackground is the steady traffic on the shops not on sale: each
// worker reserves one unit of a random other shop and releases it.
type podsBackground struct {
	r           *pods.Router
	ops, errors atomic.Int64

	mu      sync.Mutex
	samples []podsSample
}

type podsSample struct {
	at time.Time
	d  time.Duration
}

func (b *podsBackground) run(ctx context.Context, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 28))
	for ctx.Err() == nil {
		shop := int64(podsDemoSaleShop + 1 + rnd.IntN(podsDemoShops-1))
		id := uuid.New()
		b.op(ctx, func(c context.Context) error {
			_, err := b.r.Reserve(c, holdfast.ReserveParams{ShopID: shop, CheckoutID: id, TTL: time.Minute,
				Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
			return err
		})
		b.op(ctx, func(c context.Context) error {
			_, err := b.r.Release(c, shop, id)
			return err
		})
	}
}

// op runs one operation and records its latency by its start; an error
// (the demo's cancel aside) is counted.
func (b *podsBackground) op(ctx context.Context, f func(context.Context) error) {
	t0 := time.Now()
	err := f(ctx)
	d := time.Since(t0)
	if ctx.Err() != nil {
		return
	}
	b.ops.Add(1)
	if err != nil {
		b.errors.Add(1)
	}
	b.mu.Lock()
	b.samples = append(b.samples, podsSample{at: t0, d: d})
	b.mu.Unlock()
}

// split answers the latencies of the operations that started after from
// and before the first window, and of those that started within a window.
func (b *podsBackground) split(from time.Time, windows [][2]time.Time) (before, during []time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.samples {
		if s.at.Before(from) {
			continue
		}
		if len(windows) > 0 && s.at.Before(windows[0][0]) {
			before = append(before, s.d)
			continue
		}
		for _, w := range windows {
			if !s.at.Before(w[0]) && !s.at.After(w[1]) {
				during = append(during, s.d)
				break
			}
		}
	}
	return before, during
}

// podsSale is the pods demo's buyers' shared state.
type podsSale struct {
	r    *pods.Router
	shop int64
	ttl  time.Duration
	log  *acklog.Log

	held, claimed, released, abandoned, soldOut, retries, gaveUp atomic.Int64

	mu sync.Mutex
	// calls are the sale's calls (each attempt), by start: those that
	// overlap a fence waited on it.
	calls []podsSample
}

// fenced answers how many of the sale's calls overlapped a fence (from
// each window's start to its end) and the longest of them.
func (d *podsSale) fenced(fences [][2]time.Time) (n int, longest time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.calls {
		for _, f := range fences {
			if c.at.Before(f[1]) && c.at.Add(c.d).After(f[0]) {
				n++
				longest = max(longest, c.d)
				break
			}
		}
	}
	return n, longest
}

// retry runs op until its answer is definite: not unavailable (a fence
// that outlasted the router's wait), not outcome_unknown; the same
// checkout id makes the retry safe.
func (d *podsSale) retry(ctx context.Context, op func(context.Context) error) error {
	deadline := time.Now().Add(podsDemoRetryMax)
	for {
		c, cancel := context.WithTimeout(ctx, podsDemoOpTimeout)
		t0 := time.Now()
		err := op(c)
		dur := time.Since(t0)
		cancel()
		d.mu.Lock()
		d.calls = append(d.calls, podsSample{at: t0, d: dur})
		d.mu.Unlock()
		if !errors.Is(err, holdfast.ErrUnavailable) && !errors.Is(err, holdfast.ErrOutcomeUnknown) &&
			!errors.Is(err, holdfast.ErrShopMoved) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			d.gaveUp.Add(1)
			return err
		}
		d.retries.Add(1)
		time.Sleep(time.Duration(20+rand.N(50)) * time.Millisecond)
	}
}

// definite reports whether err is an answer (nil or a business error), not
// an unknown outcome.
func definite(err error) bool {
	return !errors.Is(err, holdfast.ErrUnavailable) && !errors.Is(err, holdfast.ErrOutcomeUnknown) &&
		!errors.Is(err, holdfast.ErrShopMoved) && !errors.Is(err, context.DeadlineExceeded) &&
		!errors.Is(err, context.Canceled)
}

// buy is one buyer: reserve, pay, then claim (pay), release (fail), or
// abandon (the hold expires). Every definite answer goes into the log.
func (d *podsSale) buy(ctx context.Context, payRate, failRate float64) {
	id := uuid.New()
	err := d.retry(ctx, func(c context.Context) error {
		_, err := d.r.Reserve(c, holdfast.ReserveParams{ShopID: d.shop, CheckoutID: id, TTL: d.ttl,
			Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
		return err
	})
	switch {
	case errors.Is(err, holdfast.ErrInsufficientStock):
		d.soldOut.Add(1)
		return
	case !definite(err):
		d.log.Unknown(id)
		return
	case err != nil:
		d.log.Unknown(id) // an answer the demo does not expect: not judged
		return
	}
	d.held.Add(1)
	d.log.Ack(id, holdfast.StatusHeld)
	time.Sleep(time.Duration(rand.N(5)) * time.Millisecond) // the payment provider
	var h *holdfast.Hold
	switch r := rand.Float64(); {
	case r < payRate:
		err = d.retry(ctx, func(c context.Context) (err error) { h, err = d.r.Claim(c, d.shop, id); return err })
		switch {
		case err == nil && h.Status == holdfast.StatusClaimed, errors.Is(err, holdfast.ErrHoldClaimed):
			d.claimed.Add(1)
			d.log.Ack(id, holdfast.StatusClaimed)
		case errors.Is(err, holdfast.ErrHoldExpired):
			d.log.Ack(id, holdfast.StatusExpired)
		default:
			d.log.Unknown(id)
		}
	case r < payRate+failRate:
		err = d.retry(ctx, func(c context.Context) (err error) { h, err = d.r.Release(c, d.shop, id); return err })
		switch {
		case err == nil && h.Status == holdfast.StatusReleased, errors.Is(err, holdfast.ErrHoldReleased):
			d.released.Add(1)
			d.log.Ack(id, holdfast.StatusReleased)
		case err == nil && h.Status == holdfast.StatusExpired, errors.Is(err, holdfast.ErrHoldExpired):
			d.log.Ack(id, holdfast.StatusExpired)
		default:
			d.log.Unknown(id)
		}
	default:
		d.abandoned.Add(1)
		d.log.Ack(id, holdfast.StatusExpired) // left to expire
	}
}
