package galera_test

import (
	"context"
	"database/sql"
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
	"github.com/holdfast/holdfast/failovertest"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/galera"
	"github.com/holdfast/holdfast/mysql/migrations"
)

// full reports the long form of the failover suite (HOLDFAST_FAILOVER_FULL
// set): failoversFull faults of each kind instead of one.
func full() bool { return os.Getenv("HOLDFAST_FAILOVER_FULL") != "" }

const (
	failoversFull = 20
	// callTimeout bounds one call, as a service's request deadline would.
	callTimeout = 5 * time.Second
	// recoverMax fails the test when no reservation succeeds this long
	// after a fault (the target: 20 s per failover).
	recoverMax = 20 * time.Second
	workers    = 6
	// arrivalEvery and arrivalsMax shape the arriving buyers.
	arrivalEvery = 50 * time.Millisecond
	arrivalsMax  = 32
	keys         = 6
	stockEach    = 1_000_000
	shop         = 1
)

// checkout is one reservation the workers made, and what they were told.
type checkout struct {
	id   uuid.UUID
	item int64
	// held: a Reserve answered success; claimed: a Claim answered success.
	held, claimed bool
	// doubt: a call answered outcome_unknown or unavailable (the model's
	// "may or may not have happened"); resolved after the run.
	reserveDoubt, claimDoubt bool
}

// TestFailover reserves and claims through the MySQL engine, on a URL
// naming all three nodes, from several goroutines while the writer node is
// killed, frozen and switched over (one of each; HOLDFAST_FAILOVER_FULL=1:
// twenty of each). After every fault a reservation must succeed within
// recoverMax. At the end: every acknowledged hold and claim is there, no
// call was told a false "not found" or "sold out", calls in doubt resolve
// by a retry with the same checkout id, and the invariant holds.
func TestFailover(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	if err := createDatabase(ctx, c, "holdfast"); err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
	}
	client, err := mysql.Open(c.URLFor("holdfast"), 30, holdfast.Config{Strategy: holdfast.StrategyBatch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.DB().Close() })
	if _, err := migrations.Up(ctx, client.DB()); err != nil {
		t.Fatalf("migrate through the writer: %v", err)
	}
	for k := int64(1); k <= keys; k++ {
		n := stockEach
		if _, err := client.ChangeStock(ctx, holdfast.StockChange{Key: key(k), Set: &n, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu        sync.Mutex
		all       []*checkout
		lies      []string
		successes atomic.Int64
		okMu      sync.Mutex
		lastOK    [2]time.Time // the last successful reservation's start and end
		lastErr   atomic.Value // the last answer in doubt, for a failure's message
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// one is one checkout: reserve one unit (half the time of the hot
	// key) and, when mayClaim, claim it half the time.
	one := func(mayClaim bool) {
		co := &checkout{id: uuid.New(), item: 1 + rand.Int64N(keys)}
		if rand.IntN(2) == 0 {
			co.item = 1 // the hot key
		}
		mu.Lock()
		all = append(all, co)
		mu.Unlock()
		began := time.Now()
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		h, err := client.Reserve(cctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: co.id, TTL: time.Hour,
			Lines: []holdfast.Line{{ItemID: co.item, LocationID: 1, Quantity: 1}}})
		cancel()
		switch {
		case err == nil && h.Status == holdfast.StatusHeld:
			co.held = true
			successes.Add(1)
			okMu.Lock()
			lastOK = [2]time.Time{began, time.Now()}
			okMu.Unlock()
		case inDoubt(err):
			co.reserveDoubt = true
			lastErr.Store(fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
			return
		default:
			mu.Lock()
			lies = append(lies, fmt.Sprintf("reserve %s: %+v %v", co.id, h, err))
			mu.Unlock()
			return
		}
		if !mayClaim || rand.IntN(2) == 0 {
			return
		}
		cctx, cancel = context.WithTimeout(ctx, callTimeout)
		h, err = client.Claim(cctx, shop, co.id)
		cancel()
		switch {
		case err == nil && h.Status == holdfast.StatusClaimed:
			co.claimed = true
		case inDoubt(err):
			co.claimDoubt = true
		default:
			mu.Lock()
			lies = append(lies, fmt.Sprintf("claim of held %s: %+v %v", co.id, h, err))
			mu.Unlock()
		}
	}
	// Busy clients: each runs one checkout after another.
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				one(true)
			}
		}()
	}
	// Arriving buyers: a new reservation every arrivalEvery, each on its
	// own (at most arrivalsMax at once), so that a buyer arrives right
	// after a fault even while the busy clients wait on calls begun
	// before it: the unavailability window is measured on them.
	wg.Add(1)
	go func() {
		defer wg.Done()
		sem := make(chan struct{}, arrivalsMax)
		tick := time.NewTicker(arrivalEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				for range arrivalsMax {
					sem <- struct{}{}
				}
				return
			case <-tick.C:
			}
			select {
			case sem <- struct{}{}:
				go func() { defer func() { <-sem }(); one(false) }()
			default:
			}
		}
	}()
	stopWorkers := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopWorkers)

	// waitSuccess waits for a reservation begun at or after since to
	// succeed, and answers how long after since it ended: the
	// unavailability a buyer arriving at since sees.
	waitSuccess := func(since time.Time) (time.Duration, error) {
		for {
			okMu.Lock()
			ok := lastOK
			okMu.Unlock()
			if !ok[0].Before(since) {
				return ok[1].Sub(since), nil
			}
			if time.Since(since) > recoverMax {
				var st []string
				for i := range galera.Nodes {
					s, err := c.NodeStatus(ctx, i)
					st = append(st, fmt.Sprintf("node %d %+v %v", i+1, s, err))
				}
				return 0, fmt.Errorf("no reservation succeeded within %v; last answer %v; %s", recoverMax, lastErr.Load(), strings.Join(st, "; "))
			}
			time.Sleep(10 * time.Millisecond) // polling a counter the workers set
		}
	}
	if _, err := waitSuccess(time.Now()); err != nil {
		t.Fatalf("before any fault: %v", err)
	}

	rounds := 1
	if full() {
		rounds = failoversFull
	}
	windows := map[failovertest.Kind][]time.Duration{}
	for r := range rounds {
		for _, k := range c.Kinds() {
			before := successes.Load()
			at, err := c.Inject(ctx, k)
			if err != nil {
				t.Fatalf("round %d %s: %v", r, k, err)
			}
			d, err := waitSuccess(at)
			if err != nil {
				t.Fatalf("round %d %s: %v", r, k, err)
			}
			windows[k] = append(windows[k], d)
			t.Logf("round %d %s: first reservation %v after the fault (%d before)", r, k, d.Round(time.Millisecond), before)
			if err := c.Heal(ctx); err != nil {
				t.Fatalf("round %d %s: heal: %v", r, k, err)
			}
			// Back on node 1: the move back is a planned switch too.
			if _, err := waitSuccess(time.Now()); err != nil {
				t.Fatalf("round %d %s: after heal: %v", r, k, err)
			}
			if err := oneWriter(ctx, c, "holdfast"); err != nil {
				t.Errorf("round %d %s: after heal: %v", r, k, err)
			}
		}
	}
	stopWorkers()

	// Resolve what was in doubt: the same call again tells the truth.
	var lost, unknownResolved int
	for _, co := range all {
		if co.reserveDoubt {
			h, err := client.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: co.id, TTL: time.Hour,
				Lines: []holdfast.Line{{ItemID: co.item, LocationID: 1, Quantity: 1}}})
			if err != nil {
				t.Fatalf("retry of reserve %s in doubt: %v", co.id, err)
			}
			co.held = h.Status == holdfast.StatusHeld || h.Status == holdfast.StatusClaimed
			co.claimed = h.Status == holdfast.StatusClaimed
			unknownResolved++
		}
		if co.claimDoubt {
			h, err := client.Claim(ctx, shop, co.id)
			if err != nil {
				t.Fatalf("retry of claim %s in doubt: %v", co.id, err)
			}
			co.claimed = h.Status == holdfast.StatusClaimed
			unknownResolved++
		}
	}
	// Every acknowledged hold and claim is there; the levels agree.
	held := map[int64]int{}
	claimed := map[int64]int{}
	for _, co := range all {
		if !co.held {
			continue
		}
		h, err := client.Hold(ctx, shop, co.id)
		switch {
		case err != nil:
			lost++
			t.Errorf("acknowledged hold %s: %v", co.id, err)
			continue
		case co.claimed && h.Status != holdfast.StatusClaimed:
			lost++
			t.Errorf("acknowledged claim %s: status %s", co.id, h.Status)
		case !co.claimed && h.Status != holdfast.StatusHeld:
			t.Errorf("hold %s: status %s, never claimed", co.id, h.Status)
		}
		if h.Status == holdfast.StatusClaimed {
			claimed[co.item]++
		} else {
			held[co.item]++
		}
	}
	for k := int64(1); k <= keys; k++ {
		l, err := client.Level(ctx, key(k))
		if err != nil {
			t.Fatal(err)
		}
		if l.Held != held[k] {
			t.Errorf("key %d: %d held, the answers say %d", k, l.Held, held[k])
		}
	}
	rep, err := client.CheckInvariant(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("invariant: %s", rep)
	}
	for _, l := range lies {
		t.Errorf("untruthful or untyped answer: %s", l)
	}
	t.Logf("calls %d, reservations acknowledged %d, in doubt resolved %d, acknowledged lost %d", len(all), successes.Load(), unknownResolved, lost)
	for _, k := range c.Kinds() {
		ws := windows[k]
		slices.Sort(ws)
		t.Logf("FAILOVER %s count %d lost %d unavailable p50 %v max %v", k, len(ws), lost, ws[len(ws)/2].Round(10*time.Millisecond), ws[len(ws)-1].Round(10*time.Millisecond))
	}
}

// inDoubt reports the answers that say the outcome is not known (or that
// nothing could be done now): the only acceptable failures during a
// failover.
func inDoubt(err error) bool {
	return errors.Is(err, holdfast.ErrOutcomeUnknown) || errors.Is(err, holdfast.ErrUnavailable) ||
		errors.Is(err, context.DeadlineExceeded)
}

// oneWriterTimeout bounds oneWriter's wait: a few probe intervals.
const oneWriterTimeout = 5 * time.Second

// oneWriter waits until holdfast's connections to database are all on one
// node, the writer: the connector closed those to the node it left.
func oneWriter(ctx context.Context, c *galera.Cluster, database string) error {
	deadline := time.Now().Add(oneWriterTimeout)
	for {
		want, err := c.Primary(ctx)
		if err != nil {
			return err
		}
		var where []string
		for i := range galera.Nodes {
			db, err := sql.Open("mysql", c.Config(i, "").FormatDSN())
			if err != nil {
				return err
			}
			var n int
			err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'root' AND DB = ?", database).Scan(&n)
			db.Close()
			if err != nil {
				return err
			}
			if n > 0 && c.NodeAddr(i) != want {
				where = append(where, fmt.Sprintf("%d on %s", n, c.NodeAddr(i)))
			}
		}
		if len(where) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connections to database %q on a node other than the writer %s after %v: %s", database, want, oneWriterTimeout, strings.Join(where, ", "))
		}
		time.Sleep(100 * time.Millisecond) // polling the process lists
	}
}

func key(item int64) holdfast.Key { return holdfast.Key{ShopID: shop, ItemID: item, LocationID: 1} }

func createDatabase(ctx context.Context, c *galera.Cluster, name string) error {
	db, err := sql.Open("mysql", c.Config(0, "").FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE DATABASE "+name)
	return err
}
