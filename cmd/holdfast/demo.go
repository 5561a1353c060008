package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgshadow"
	"github.com/holdfast/holdfast/rediscluster"
)

func init() { register(newDemoCmd) }

func newDemoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "run a flash sale: concurrent buyers race for scarce units (--scenario migration: the move off Redis)",
		Long: `Runs a flash sale on a throwaway embedded cluster (or DATABASE_URL): concurrent buyers
reserve, pay (claim), fail (release) or abandon (expire), and the invariant is checked at the end.

--scenario migration runs the move off a Redis hold store (docs/MIGRATION.md) on a
throwaway embedded cluster and a private redis-server (or DATABASE_URL and REDIS_URL):
the same flash sale through the Redis design, claims crashing between its ledger write
and its Redis cleanup at seeded points, and through holdfast; then shops go
shadow → smallest-first to primary → the kill switch reverts one.

--scenario failover runs the flash sale on a private three-node Patroni cluster (etcd and
three PostgreSQL nodes, strict synchronous replication; needs patroni and etcd installed,
see scripts/setup) and kills the primary's postmaster --failovers times mid-sale; buyers
retry unknown outcomes with the same checkout id, and every acknowledged hold, claim and
release is checked in the database at the end.

--scenario pods starts three private PostgreSQL clusters (a pod on each, the control
database beside pod a), places thirty shops over them, runs the flash sale on shop 1
while workers trade on the other shops, and moves shop 1 to pod b mid-sale (pods.Move,
--moves times, back and forth); every acknowledged answer is then checked against the
rows of the pod the shop ended on (docs/PODS.md). Its defaults are smaller: --buyers
1000, --units 400, --concurrency 16.`,
		Args: noArgs,
	}
	f := &demoFlags{}
	fs := cmd.Flags()
	fs.IntVar(&f.buyers, "buyers", 2000, "buyers in the sale")
	fs.IntVar(&f.units, "units", 500, "units of the item on sale")
	fs.IntVar(&f.concurrency, "concurrency", 64, "buyers at the checkout at once")
	fs.Float64Var(&f.payRate, "pay", 0.6, "share of holders whose payment succeeds (claim)")
	fs.Float64Var(&f.failRate, "fail", 0.25, "share of holders whose payment fails (release); the rest abandon (expire)")
	fs.DurationVar(&f.ttl, "ttl", 2*time.Second, "hold TTL (abandoned holds expire after it)")
	fs.StringVar(&f.strategy, "strategy", string(holdfast.StrategyBatch), "allocation strategy of the item: "+strategyNames())
	fs.BoolVar(&f.useHTTP, "http", false, "drive the sale through the HTTP API of an in-process server")
	fs.StringVar(&f.scenario, "scenario", scenarioSale, "the demo: "+scenarioSale+", "+scenarioMigration+", "+scenarioFailover+" or "+scenarioPods)
	fs.IntVar(&f.failovers, "failovers", 1, "failover: how many times the primary is killed during the sale")
	fs.IntVar(&f.moves, "moves", 1, "pods: how many times the shop on sale is moved during the sale (back and forth)")
	f.engine = engineFlag(fs)
	fs.Uint64Var(&f.seed, "seed", 1, "migration: picks the buyers' choices and the crash points")
	fs.IntVar(&f.crashPercent, "crash-percent", 5, "migration: share of paying buyers' claims that crash between the ledger write and the Redis cleanup, in percent")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		switch f.scenario {
		case scenarioSale:
			for _, n := range []string{"seed", "crash-percent"} {
				if cmd.Flags().Changed(n) {
					return usageError("--%s applies to --scenario %s only", n, scenarioMigration)
				}
			}
			if cmd.Flags().Changed("failovers") {
				return usageError("--failovers applies to --scenario %s only", scenarioFailover)
			}
			if cmd.Flags().Changed("moves") {
				return usageError("--moves applies to --scenario %s only", scenarioPods)
			}
			return runDemo(cmd.Context(), cmd.OutOrStdout(), f)
		case scenarioFailover: // demo_failover.go
			for _, n := range []string{"seed", "crash-percent", "http", "engine", "moves"} {
				if cmd.Flags().Changed(n) {
					return usageError("--%s does not apply to --scenario %s", n, scenarioFailover)
				}
			}
			return runFailoverDemo(cmd.Context(), cmd.OutOrStdout(), f)
		case scenarioPods: // demo_pods.go
			for _, n := range []string{"seed", "crash-percent", "http", "engine", "failovers"} {
				if cmd.Flags().Changed(n) {
					return usageError("--%s does not apply to --scenario %s", n, scenarioPods)
				}
			}
			for _, d := range []struct {
				name string
				v    *int
				def  int
			}{{"buyers", &f.buyers, podsDemoBuyers}, {"units", &f.units, podsDemoUnits}, {"concurrency", &f.concurrency, podsDemoConcurrency}} {
				if !cmd.Flags().Changed(d.name) {
					*d.v = d.def
				}
			}
			return runPodsDemo(cmd.Context(), cmd.OutOrStdout(), f)
		case scenarioMigration:
			for _, n := range []string{"buyers", "units", "concurrency", "pay", "fail", "ttl", "strategy", "http", "engine", "failovers", "moves"} {
				if cmd.Flags().Changed(n) {
					return usageError("--%s applies to --scenario %s only", n, scenarioSale)
				}
			}
			return runMigrationDemo(cmd.Context(), cmd.OutOrStdout(), f)
		}
		return usageError("unknown --scenario %q (known: %s, %s, %s or %s)", f.scenario, scenarioSale, scenarioMigration, scenarioFailover, scenarioPods)
	}
	return cmd
}

// demoFlags are demo's settings.
type demoFlags struct {
	buyers, units, concurrency int
	payRate, failRate          float64
	ttl                        time.Duration
	strategy                   string
	useHTTP                    bool
	scenario                   string
	seed                       uint64
	crashPercent               int
	failovers                  int
	moves                      int
	engine                     *string
}

// The demo's scenarios.
const (
	scenarioSale      = "flash-sale"
	scenarioMigration = "migration"
)

// crashPercentMax bounds --crash-percent.
const crashPercentMax = 50

// migrationDemoConns is the demo database's pool: a wave's buyers reserve
// at once.
const migrationDemoConns = 40

// runMigrationDemo is demo --scenario migration: pgshadow.Demo on the
// embedded defaults, a throwaway PostgreSQL cluster and a private
// redis-server, or DATABASE_URL and REDIS_URL when set.
func runMigrationDemo(ctx context.Context, w io.Writer, f *demoFlags) error {
	switch {
	case f.seed < 1:
		return usageError("--seed must be at least 1")
	case f.crashPercent < 1 || f.crashPercent > crashPercentMax:
		return usageError("--crash-percent must be between 1 and %d", crashPercentMax)
	}
	redisURL, srv, err := rediscluster.URLOrStart(ctx)
	if err != nil {
		return err
	}
	if srv != nil {
		defer srv.Stop() //nolint:errcheck
	}
	ropt, err := goredis.ParseURL(redisURL)
	if err != nil {
		return errors.New("REDIS_URL is not a valid redis:// URL")
	}
	ropt.PoolSize = migrationDemoConns
	rdb := goredis.NewClient(ropt)
	defer rdb.Close()

	db, err := openDatabase(ctx, throwaway, "", stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, migrationDemoConns, "holdfast-demo")
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return err
	}
	_, err = pgshadow.Demo(ctx, w, pool, rdb, pgshadow.DemoOptions{Seed: f.seed, CrashPercent: f.crashPercent})
	return err
}

// demoBackend is what the demo's buyers call: the engine directly, or the
// HTTP API (demo --http).
type demoBackend interface {
	Reserve(ctx context.Context, p holdfast.ReserveParams) (*holdfast.Hold, error)
	Claim(ctx context.Context, shopID int64, checkout uuid.UUID) (*holdfast.Hold, error)
	Release(ctx context.Context, shopID int64, checkout uuid.UUID) (*holdfast.Hold, error)
}

// startHTTPBackend starts the service in-process and returns a backend that
// drives it over HTTP; set by demo_http.go.
var startHTTPBackend func(ctx context.Context, hc *postgres.Client, pool *pgxpool.Pool, shopID int64) (demoBackend, func(), error)

type demoStats struct {
	held, claimed, released, outOfStock, errors atomic.Int64
	mu                                          sync.Mutex
	latencies                                   []time.Duration
	// cutOff are the checkouts whose last operation the interrupt cut
	// off: it may have committed or not (its answer never came), so its
	// outcome is unknown until read back (settle).
	cutOff []uuid.UUID
}

// unknown records a checkout whose operation the interrupt cut off.
func (st *demoStats) unknown(id uuid.UUID) {
	st.mu.Lock()
	st.cutOff = append(st.cutOff, id)
	st.mu.Unlock()
}

// settled is what the cut-off checkouts turned out to be.
type settled struct {
	claimed, released, releasedNow, expired, neverHeld int
}

// String lists the outcomes that occurred, e.g. " 1 claimed (counted
// above), 61 held and released now".
func (s settled) String() string {
	var b strings.Builder
	for _, p := range []struct {
		n    int
		what string
	}{{s.claimed, "claimed (counted above)"}, {s.released, "released"}, {s.expired, "expired"}, {s.releasedNow, "held and released now"}, {s.neverHeld, "never held"}} {
		if p.n > 0 {
			if b.Len() > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %d %s", p.n, p.what)
		}
	}
	if b.Len() == 0 {
		return " none"
	}
	return b.String()
}

// settle reads the cut-off checkouts back, through the engine's locks: a
// Release waits for an operation still in flight on the server and then
// answers what it did. A claim that committed answers ErrHoldClaimed (it
// counts as claimed); a hold whose claim or release never happened is
// released now (its buyer was cut off: the units go back); a reservation
// that never committed is not found.
func settle(ctx context.Context, eng holdfast.Engine, shop int64, ids []uuid.UUID) (settled, error) {
	var s settled
	for _, id := range ids {
		h, err := eng.Release(ctx, shop, id)
		switch {
		case errors.Is(err, holdfast.ErrHoldClaimed):
			s.claimed++
		case errors.Is(err, holdfast.ErrNotFound):
			s.neverHeld++
		case err != nil:
			return s, err
		case !h.Replayed:
			s.releasedNow++
		case h.Status == holdfast.StatusExpired:
			s.expired++
		default:
			s.released++
		}
	}
	return s, nil
}

func runDemo(ctx context.Context, w io.Writer, f *demoFlags) error {
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
	}

	engine, err := resolveEngine(*f.engine)
	if err != nil {
		return err
	}
	if engine == engineMySQL {
		if f.useHTTP {
			return usageError("--http runs on --engine %s only", enginePostgres)
		}
		return runMySQLDemo(ctx, w, f)
	}
	db, err := openDatabase(ctx, throwaway, "", stderrf)
	if err != nil {
		return err
	}
	defer db.Close()
	pool, err := db.pool(ctx, int32(f.concurrency+8), "holdfast-demo")
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return err
	}
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		return err
	}
	var backend demoBackend = hc
	via := "the Go library"
	// A fresh shop per run, so the demo can run repeatedly on one database.
	shop := demoShop()
	if f.useHTTP {
		if startHTTPBackend == nil {
			return errors.New("this build has no HTTP service")
		}
		b, stop, err := startHTTPBackend(ctx, hc, pool, shop)
		if err != nil {
			return err
		}
		defer stop()
		backend, via = b, "the HTTP API"
	}
	return runSale(ctx, w, hc, backend, shop, via+" on PostgreSQL", f)
}

// demoShop is a fresh shop id per run, so the demo can run repeatedly on one
// database.
func demoShop() int64 { return time.Now().UnixNano()%1_000_000_000 + 1 }

// runSale runs the flash sale for shop on eng (any engine), the buyers
// calling backend (eng itself, or the HTTP API in front of it), and prints
// the summary with the invariant check.
func runSale(ctx context.Context, w io.Writer, eng holdfast.Engine, backend demoBackend, shop int64, via string, f *demoFlags) error {
	key := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
	if _, err := eng.SetStrategy(ctx, key, holdfast.Strategy(f.strategy), 0); err != nil {
		return err
	}
	units := f.units
	if _, err := eng.ChangeStock(ctx, holdfast.StockChange{Key: key, Set: &units, Reason: "demo: stock for the flash sale"}); err != nil {
		return err
	}

	fmt.Fprintf(w, "flash sale: %d buyers, %d units, %d at once, strategy %s, via %s\n", f.buyers, f.units, f.concurrency, f.strategy, via)

	st := &demoStats{}
	var abandoned []uuid.UUID
	var abMu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	var done atomic.Int64
	for range f.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				id := buy(ctx, backend, shop, f.ttl, f.payRate, f.failRate, st)
				if id != uuid.Nil {
					abMu.Lock()
					abandoned = append(abandoned, id)
					abMu.Unlock()
				}
				done.Add(1)
			}
		}()
	}
	stopProgress := progress(func() string {
		return fmt.Sprintf("buyers %d/%d  held %d  claimed %d  released %d  sold out %d",
			done.Load(), f.buyers, st.held.Load(), st.claimed.Load(), st.released.Load(), st.outOfStock.Load())
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
	elapsed := time.Since(start)
	stopProgress()

	// Abandoned holds expire after their TTL; the sweeper gives their
	// units back.
	var expired int
	var err error
	if len(abandoned) > 0 && ctx.Err() == nil {
		wait := f.ttl + 100*time.Millisecond
		fmt.Fprintf(os.Stderr, "waiting %v for %d abandoned holds to expire...\n", wait.Round(100*time.Millisecond), len(abandoned))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		for ctx.Err() == nil {
			n, err := eng.SweepOnce(ctx)
			if err != nil && ctx.Err() == nil {
				return err
			}
			expired += n
			if n == 0 {
				break
			}
		}
	}
	// Interrupted (Ctrl-C): the summary so far, and the invariant, which
	// holds at every moment, checked on a context of its own. The
	// operations the interrupt cut off have unknown outcomes (a claim may
	// have committed although its answer was "canceled"): read them back
	// before the counts are compared with the database.
	interrupted := ctx.Err() != nil
	var cut settled
	if interrupted {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cut, err = settle(ctx, eng, shop, st.cutOff); err != nil {
			return err
		}
		st.claimed.Add(int64(cut.claimed))
	}

	lvl, err := eng.Level(ctx, key)
	if err != nil {
		return err
	}
	rep, err := eng.CheckInvariant(ctx)
	if err != nil {
		return err
	}
	claimed := st.claimed.Load()
	oversold := max(0, claimed-int64(f.units))
	lat := st.latencies
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	if interrupted {
		fmt.Fprintf(w, "\nsummary, interrupted after %d of %d buyers (%v; unpaid holds expire after --ttl)\n", done.Load(), f.buyers, elapsed.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "\nsummary (%v)\n", elapsed.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  held           %6d  (reservations granted)\n", st.held.Load())
	fmt.Fprintf(w, "  claimed        %6d  (paid: permanently deducted)\n", claimed)
	fmt.Fprintf(w, "  released       %6d  (payment failed: units back)\n", st.released.Load())
	fmt.Fprintf(w, "  expired        %6d  (abandoned: swept after TTL)\n", expired)
	fmt.Fprintf(w, "  out of stock   %6d  (answered sold out)\n", st.outOfStock.Load())
	fmt.Fprintf(w, "  errors         %6d\n", st.errors.Load())
	if interrupted {
		fmt.Fprintf(w, "  unknown        %6d  (cut off by the interrupt; read back:%s)\n", len(st.cutOff), cut)
	}
	fmt.Fprintf(w, "  oversold       %6d\n", oversold)
	fmt.Fprintf(w, "  throughput     %6.0f reservations/s\n", float64(len(lat))/elapsed.Seconds())
	fmt.Fprintf(w, "  reserve p50    %v, p99 %v\n", pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond))
	fmt.Fprintf(w, "  stock now      available %d, held %d, pooled %d, sellable %d\n", lvl.Available, lvl.Held, lvl.Pooled, lvl.Sellable)
	if rep.OK() && oversold == 0 && lvl.Available == f.units-int(claimed) {
		fmt.Fprintf(w, "  invariant      OK: pooled + held <= available on all %d keys; available = %d - %d claimed\n", rep.Keys, f.units, claimed)
		if interrupted {
			return &exitError{code: exitInterrupted, msg: fmt.Sprintf("interrupted after %d of %d buyers: the summary above is partial", done.Load(), f.buyers)}
		}
		return nil
	}
	why := rep.String()
	switch {
	case !rep.OK():
	case oversold > 0:
		why = fmt.Sprintf("%d claimed of %d units", claimed, f.units)
	default:
		why = fmt.Sprintf("available %d, not %d - %d claimed", lvl.Available, f.units, claimed)
	}
	fmt.Fprintf(w, "  invariant      BROKEN: %s\n", why)
	return &exitError{code: 1, msg: "invariant broken"}
}

// buy is one buyer: reserve, "pay" outside any transaction, then claim,
// release or abandon. It returns the checkout id of an abandoned hold.
func buy(ctx context.Context, b demoBackend, shop int64, ttl time.Duration, payRate, failRate float64, st *demoStats) uuid.UUID {
	id := uuid.New()
	t0 := time.Now()
	_, err := b.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: id, TTL: ttl,
		Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
	d := time.Since(t0)
	st.mu.Lock()
	st.latencies = append(st.latencies, d)
	st.mu.Unlock()
	switch {
	case errors.Is(err, holdfast.ErrInsufficientStock):
		st.outOfStock.Add(1)
		return uuid.Nil
	case err != nil && ctx.Err() != nil:
		st.unknown(id) // cut off: it may have been held
		return uuid.Nil
	case err != nil:
		st.errors.Add(1)
		return uuid.Nil
	}
	st.held.Add(1)
	// The payment provider: no database connection is held meanwhile.
	time.Sleep(time.Duration(rand.N(5)) * time.Millisecond)
	switch r := rand.Float64(); {
	case r < payRate:
		if _, err := b.Claim(ctx, shop, id); err != nil {
			st.failed(ctx, id)
			return uuid.Nil
		}
		st.claimed.Add(1)
	case r < payRate+failRate:
		if _, err := b.Release(ctx, shop, id); err != nil {
			st.failed(ctx, id)
			return uuid.Nil
		}
		st.released.Add(1)
	default:
		return id
	}
	return uuid.Nil
}

// failed counts a claim or release that answered an error: an error, or,
// when the interrupt cut it off, an unknown outcome (it may have committed).
func (st *demoStats) failed(ctx context.Context, id uuid.UUID) {
	if ctx.Err() != nil {
		st.unknown(id)
		return
	}
	st.errors.Add(1)
}

// progress redraws a status line on stderr until the returned func is
// called: in place on a terminal, a line a second otherwise.
func progress(line func() string) func() {
	tty := false
	if st, err := os.Stderr.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		tty = true
	}
	every, format := time.Second, "%s\n"
	if tty {
		every, format = 200*time.Millisecond, "\r\033[K%s"
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprintf(os.Stderr, "\r\033[K%s\n", line())
				} else {
					fmt.Fprintf(os.Stderr, "%s\n", line())
				}
				return
			case <-t.C:
				fmt.Fprintf(os.Stderr, format, line())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
