package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/failovertest"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrate"
	"github.com/holdfast/holdfast/postgres/patroni"
)

// scenarioFailover is demo --scenario failover: the flash sale on a private
// three-node Patroni cluster whose primary is killed mid-sale (#27).
const scenarioFailover = "failover"

// failoversMax bounds --failovers.
const failoversMax = 10

// failoverRetryMax bounds how long a buyer retries one operation whose
// answer was unavailable or outcome_unknown (same checkout id: the retry
// tells the truth).
const failoverRetryMax = 2 * time.Minute

// runFailoverDemo starts a private Patroni cluster (etcd and three
// PostgreSQL nodes, strict synchronous replication), runs the flash sale
// on it through a pool that follows the primary, kills the primary's
// postmaster (kill -9) --failovers times while buyers reserve, claim and
// release, and checks at the end that every acknowledged hold, claim and
// release is in the database and nothing was oversold.
func runFailoverDemo(ctx context.Context, w io.Writer, f *demoFlags) error {
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
	case f.failovers < 1 || f.failovers > failoversMax:
		return usageError("--failovers must be between 1 and %d", failoversMax)
	}
	stderrf("starting a private Patroni cluster (etcd and three PostgreSQL nodes, strict synchronous replication)...")
	cl, err := patroni.Start(ctx, patroni.Options{Log: stderrf})
	if err != nil {
		return err
	}
	defer cl.Close(context.Background()) //nolint:errcheck
	cfg, err := pgxpool.ParseConfig(cl.URL())
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(f.concurrency + 8)
	cfg.ConnConfig.RuntimeParams["application_name"] = "holdfast-demo"
	follow := postgres.Follow(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	follow.Attach(pool)
	if _, err := migrate.Up(ctx, pool); err != nil {
		return err
	}
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		return err
	}
	shop := demoShop()
	key := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
	if _, err := hc.SetStrategy(ctx, key, holdfast.Strategy(f.strategy), 0); err != nil {
		return err
	}
	units := f.units
	if _, err := hc.ChangeStock(ctx, holdfast.StockChange{Key: key, Set: &units, Reason: "demo: stock for the flash sale"}); err != nil {
		return err
	}
	fmt.Fprintf(w, "flash sale: %d buyers, %d units, %d at once, strategy %s, on a 3-node Patroni cluster (%s); the primary is killed %d time(s) mid-sale\n",
		f.buyers, f.units, f.concurrency, f.strategy, cl.Dir(), f.failovers)

	d := &failoverSale{eng: hc, shop: shop, ttl: f.ttl}
	work := make(chan int)
	var wg sync.WaitGroup
	var done atomic.Int64
	start := time.Now()
	for range f.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				d.buy(ctx, f.payRate, f.failRate)
				done.Add(1)
			}
		}()
	}
	// The killer: the primary's postmaster dies each time another share of
	// the buyers is through, and the cluster is healed before the next.
	var kills []time.Time
	killErr := make(chan error, 1)
	go func() {
		defer close(killErr)
		for i := range f.failovers {
			// Mid-sale: before the units run out, and before the buyers do.
			threshold := int64(f.buyers) * int64(i+1) / int64(f.failovers+2)
			held := int64(f.units) * int64(i+1) / int64(f.failovers+2)
			for done.Load() < threshold && d.held.Load() < held && ctx.Err() == nil && done.Load() < int64(f.buyers) {
				time.Sleep(20 * time.Millisecond)
			}
			if ctx.Err() != nil || done.Load() >= int64(f.buyers) {
				return
			}
			at, err := cl.Inject(ctx, failovertest.Kill)
			if err != nil {
				killErr <- err
				return
			}
			d.mu.Lock()
			kills = append(kills, at)
			d.mu.Unlock()
			if err := cl.Heal(ctx); err != nil {
				killErr <- err
				return
			}
		}
	}()
	stopProgress := progress(func() string {
		return fmt.Sprintf("buyers %d/%d  held %d  claimed %d  released %d  sold out %d  retried %d",
			done.Load(), f.buyers, d.held.Load(), d.claimed.Load(), d.released.Load(), d.soldOut.Load(), d.retries.Load())
	})
feed:
	for i := range f.buyers {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	stopProgress()
	if err := <-killErr; err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		return ctx.Err()
	}

	// Every acknowledged answer is checked against the database: a hold
	// acknowledged is there, a claim or release acknowledged is so.
	lost := 0
	d.mu.Lock()
	acked := d.acked
	d.mu.Unlock()
	for id, want := range acked {
		h, err := hc.Hold(ctx, shop, id)
		switch {
		case errors.Is(err, holdfast.ErrNotFound):
			lost++
			stderrf("lost: checkout %s was told %s, and is not in the database", id, want)
		case err != nil:
			return err
		case want == holdfast.StatusClaimed && h.Status != holdfast.StatusClaimed,
			want == holdfast.StatusReleased && h.Status != holdfast.StatusReleased:
			lost++
			stderrf("lost: checkout %s was told %s, and is %s in the database", id, want, h.Status)
		}
	}
	lvl, err := hc.Level(ctx, key)
	if err != nil {
		return err
	}
	rep, err := hc.CheckInvariant(ctx)
	if err != nil {
		return err
	}
	claimed := d.claimed.Load()
	oversold := max(0, claimed-int64(f.units))
	var unavailable time.Duration
	d.mu.Lock()
	ackTimes := slices.Clone(d.answerTimes)
	d.mu.Unlock()
	slices.SortFunc(ackTimes, func(a, b time.Time) int { return a.Compare(b) })
	for _, k := range kills {
		unavailable = max(unavailable, ackGap(ackTimes, k))
	}
	fmt.Fprintf(w, "\nsummary (%v)\n", elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  held           %6d  (reservations acknowledged)\n", d.held.Load())
	fmt.Fprintf(w, "  claimed        %6d  (paid: permanently deducted)\n", claimed)
	fmt.Fprintf(w, "  released       %6d  (payment failed: units back)\n", d.released.Load())
	fmt.Fprintf(w, "  out of stock   %6d  (answered sold out)\n", d.soldOut.Load())
	fmt.Fprintf(w, "  retried        %6d  (answers unavailable or outcome_unknown, retried with the same checkout id)\n", d.retries.Load())
	fmt.Fprintf(w, "  gave up        %6d\n", d.gaveUp.Load())
	fmt.Fprintf(w, "  stock now      available %d, held %d, pooled %d, sellable %d\n", lvl.Available, lvl.Held, lvl.Pooled, lvl.Sellable)
	okInv := rep.OK() && lvl.Available == f.units-int(claimed)
	if okInv {
		fmt.Fprintf(w, "  invariant      OK: pooled + held <= available on all %d keys; available = %d - %d claimed\n", rep.Keys, f.units, claimed)
	} else {
		fmt.Fprintf(w, "  invariant      BROKEN: %s; available %d, want %d - %d claimed\n", rep, lvl.Available, f.units, claimed)
	}
	fmt.Fprintf(w, "acknowledged lost %d\n", lost)
	fmt.Fprintf(w, "oversold %d\n", oversold)
	fmt.Fprintf(w, "failovers %d\n", len(kills))
	fmt.Fprintf(w, "unavailable max %.1fs\n", unavailable.Seconds())
	if lost > 0 || oversold > 0 || !okInv || d.gaveUp.Load() > 0 {
		return &exitError{code: 1, msg: "the failover lost acknowledged work, oversold, or a buyer never got a definite answer"}
	}
	return nil
}

// ackGap is the longest stretch after at with no definite answer.
func ackGap(ts []time.Time, at time.Time) time.Duration {
	var g time.Duration
	prev := at
	for _, t := range ts {
		if t.After(at) {
			g = max(g, t.Sub(prev))
			prev = t
		}
	}
	return g
}

// failoverSale is the failover demo's buyers' shared state.
type failoverSale struct {
	eng  *postgres.Client
	shop int64
	ttl  time.Duration

	held, claimed, released, soldOut, retries, gaveUp atomic.Int64

	mu    sync.Mutex
	acked map[uuid.UUID]holdfast.Status // what each acknowledged checkout was last told
	// answerTimes are when each definite answer came (a hold, sold out, a
	// claim, a release): the unavailability is the longest gap after a kill.
	answerTimes []time.Time
}

// retry runs op until its answer is definite: not unavailable, not
// outcome_unknown (the same checkout id makes the retry safe, and it then
// answers what happened).
func (d *failoverSale) retry(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(failoverRetryMax)
	for {
		err := op()
		if errors.Is(err, holdfast.ErrHoldClaimed) || errors.Is(err, holdfast.ErrHoldReleased) {
			// A retry of a claim (release) whose earlier attempt's outcome
			// was unknown: this answer says it committed.
			return err
		}
		if !errors.Is(err, holdfast.ErrUnavailable) && !errors.Is(err, holdfast.ErrOutcomeUnknown) &&
			!errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			d.gaveUp.Add(1)
			return err
		}
		d.retries.Add(1)
		time.Sleep(time.Duration(50+rand.N(100)) * time.Millisecond)
	}
}

// failoverOpTimeout bounds one attempt, as a service's request timeout
// would: a commit waiting on a lost primary then answers outcome_unknown.
const failoverOpTimeout = 5 * time.Second

func (d *failoverSale) timed(ctx context.Context, op func(context.Context) error) error {
	c, cancel := context.WithTimeout(ctx, failoverOpTimeout)
	defer cancel()
	return op(c)
}

func (d *failoverSale) ack(id uuid.UUID, s holdfast.Status) {
	d.mu.Lock()
	if d.acked == nil {
		d.acked = map[uuid.UUID]holdfast.Status{}
	}
	d.acked[id] = s
	d.answerTimes = append(d.answerTimes, time.Now())
	d.mu.Unlock()
}

// buy is one buyer: reserve, pay, then claim or release, or abandon.
func (d *failoverSale) buy(ctx context.Context, payRate, failRate float64) {
	id := uuid.New()
	err := d.retry(ctx, func() error {
		return d.timed(ctx, func(c context.Context) error {
			_, err := d.eng.Reserve(c, holdfast.ReserveParams{ShopID: d.shop, CheckoutID: id, TTL: d.ttl,
				Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
			return err
		})
	})
	switch {
	case errors.Is(err, holdfast.ErrInsufficientStock):
		d.soldOut.Add(1)
		d.mu.Lock()
		d.answerTimes = append(d.answerTimes, time.Now())
		d.mu.Unlock()
		return
	case err != nil:
		return
	}
	d.held.Add(1)
	d.ack(id, holdfast.StatusHeld)
	time.Sleep(time.Duration(rand.N(5)) * time.Millisecond) // the payment provider
	switch r := rand.Float64(); {
	case r < payRate:
		var h *holdfast.Hold
		err := d.retry(ctx, func() error {
			return d.timed(ctx, func(c context.Context) (err error) { h, err = d.eng.Claim(c, d.shop, id); return err })
		})
		if errors.Is(err, holdfast.ErrHoldClaimed) || (err == nil && h.Status == holdfast.StatusClaimed) {
			d.claimed.Add(1)
			d.ack(id, holdfast.StatusClaimed)
		}
	case r < payRate+failRate:
		// A release answers the hold as it is: released, or expired when
		// its TTL ran out first (a failover's gap can outlast --ttl).
		var h *holdfast.Hold
		err := d.retry(ctx, func() error {
			return d.timed(ctx, func(c context.Context) (err error) { h, err = d.eng.Release(c, d.shop, id); return err })
		})
		if errors.Is(err, holdfast.ErrHoldReleased) || (err == nil && h.Status == holdfast.StatusReleased) {
			d.released.Add(1)
			d.ack(id, holdfast.StatusReleased)
		}
	}
}
