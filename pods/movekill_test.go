package pods_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/migrations"
	"github.com/holdfast/holdfast/mysql/mymove"
	"github.com/holdfast/holdfast/mysql/mysqlcluster"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/postgres/pgmove"
	"github.com/holdfast/holdfast/postgres/podmap"
)

// killPod is one pod of TestMoveKilledUnderLoad whose server the test may
// kill: PostgreSQL (its own private server) or MariaDB.
type killPod struct {
	name string
	eng  interface {
		holdfast.Engine
		SequenceEvents(ctx context.Context) (int, error)
	}
	pod   pods.Pod
	store pods.MoveStore
	// count answers a count(*) query (no arguments).
	count func(t *testing.T, q string) int64
	// streams counts what streams left on the pod (PostgreSQL: its
	// subscriptions, publications and replication slots); nil: none can.
	streams func(t *testing.T) int64
	// kill crashes the pod's server (nil: this pod's server is shared, the
	// test does not kill it); restart brings it back on the same data.
	kill, restart func(t *testing.T)
}

// crash stops the server the way a crash would: an immediate shutdown
// (SIGQUIT to the postmaster: every backend exits at once, no checkpoint;
// the restart runs crash recovery), keeping its files.
func (s *server) crash(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.c.DataDir(), "pgdata", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop within 30s")
	}
}

func newPGKillPod(t *testing.T, name string) *killPod {
	t.Helper()
	// Durable: a commit acknowledged is on disk (synchronous_commit on),
	// so a crash loses none; a test server's defaults would (and so would
	// any server's, so set).
	srv, err := startServerWith(context.Background(), pgcluster.Options{Logical: true, Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	p := newPodWith(t, name, srv, holdfast.Config{SweepInterval: 100 * time.Millisecond})
	return &killPod{
		name: name, eng: p.eng, pod: p.pod(), store: pgmove.New(p.pool),
		count: func(t *testing.T, q string) int64 { t.Helper(); return count(t, p, q) },
		streams: func(t *testing.T) int64 {
			t.Helper()
			return count(t, p, `SELECT (SELECT count(*) FROM pg_subscription s JOIN pg_database d ON d.oid = s.subdbid AND d.datname = current_database())
				+ (SELECT count(*) FROM pg_publication)
				+ (SELECT count(*) FROM pg_replication_slots WHERE database = current_database())`)
		},
		kill:    func(t *testing.T) { srv.crash(t) },
		restart: func(t *testing.T) { srv.restart(t) },
	}
}

// newMariaKillPod is a MariaDB pod on a private server of its own (killed
// with SIGKILL), or, shared, a database of the tests' server (mysqltest),
// which is never killed.
func newMariaKillPod(t *testing.T, name string, own bool) *killPod {
	t.Helper()
	ec := holdfast.Config{SweepInterval: 100 * time.Millisecond}
	if !own {
		p := newMariaPod(t, name, ec)
		return &killPod{name: name, eng: p.eng, pod: p.pod(), store: mymove.New(p.db),
			count: func(t *testing.T, q string) int64 { t.Helper(); return p.count(t, q) }}
	}
	ctx := context.Background()
	c, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	admin, err := sql.Open("mysql", c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE pod_"+name); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	cfg := c.Config("pod_" + name)
	mysqltest.Configure(cfg)
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(16)
	t.Cleanup(func() { db.Close() })
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	eng, err := mysql.New(db, ec)
	if err != nil {
		t.Fatal(err)
	}
	mp := &mariaPod{name: name, db: db, eng: eng}
	return &killPod{
		name: name, eng: eng, pod: mp.pod(), store: mymove.New(db),
		count: func(t *testing.T, q string) int64 { t.Helper(); return mp.count(t, q) },
		kill: func(t *testing.T) {
			t.Helper()
			b, err := os.ReadFile(filepath.Join(c.Dir(), "run", "mariadb.pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("mariadbd did not exit within 30s of SIGKILL")
			}
		},
		restart: func(t *testing.T) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := c.Restart(ctx, syscall.SIGKILL); err != nil { // the process is gone already: starts it
				t.Fatal(err)
			}
		},
	}
}

// killCase is one kill of TestMoveKilledUnderLoad: a move by method whose
// victim ("source" or "target") is killed at point ("streaming": ready
// to fence, the shop trading and, streamed, its changes streaming;
// "fenced": under the fence, before the catch-up or the copy; "copied":
// under the fence, the target holding the whole shop; "gone": the source
// marked gone, before the switch), then resolved by
// "abort" (the shop trades on its source) or "resume" (the move again).
type killCase struct {
	method, victim, point, then string
}

func (c killCase) String() string {
	return c.method + "/" + c.victim + "-killed-" + c.point + "/" + c.then
}

// TestMoveKilledUnderLoad crashes the source's or the target's server in
// the middle of a move of shop 1 while workers trade through the router
// on it and on a shop of each pod (2 on x, 3 on y). Each time the move
// answers an error: killed before the gone mark, it did not switch and
// either undid itself (the marks and streams as before the move) or says
// it could not (ErrMoveIncomplete); killed after it, it switched (with its
// report; the target dead: ErrMoveUnresolved). Every answer a worker got
// is true of the final state (applied: there exactly once, claims equal
// claim ledger rows and the level's drop; refused retriably: not applied;
// outcome unknown: either); the shop of the pod that stays up has zero
// errors, during the outage or the move; once the server is back, Abort
// (the shop trades where the map places it) or the move again (after
// Abort when the killed move left something: the shop trades on the
// target) resolves it, leaving no stream, the feed without a gap and the
// invariant on both pods.
// Short form: two kills on PostgreSQL and one on MariaDB;
// HOLDFAST_MOVE_BIG=1: every method × victim × point on PostgreSQL.
func TestMoveKilledUnderLoad(t *testing.T) {
	big := os.Getenv("HOLDFAST_MOVE_BIG") != ""
	pgCases := []killCase{
		{pods.MethodStream, "source", "fenced", "resume"},
		{pods.MethodCopy, "target", "fenced", "abort"},
	}
	if big {
		pgCases = nil
		then := []string{"abort", "resume"}
		i := 0
		for _, method := range []string{pods.MethodStream, pods.MethodCopy} {
			for _, point := range []string{"streaming", "fenced", "copied", "gone"} {
				for _, victim := range []string{"source", "target"} {
					// Each victim × point is resolved both ways over the two
					// methods.
					pgCases = append(pgCases, killCase{method, victim, point, then[(i+i/2+i/8)%2]})
					i++
				}
			}
		}
	}
	t.Run("postgres", func(t *testing.T) {
		runKills(t, newPGKillPod(t, "x"), newPGKillPod(t, "y"), pgCases)
	})
	t.Run("mariadb", func(t *testing.T) {
		// The target on the tests' shared server, which is not killed.
		runKills(t, newMariaKillPod(t, "x", true), newMariaKillPod(t, "y", false),
			[]killCase{{pods.MethodCopy, "source", "fenced", "abort"}})
	})
}

// killOp is one answer a worker got.
type killOp struct {
	shop       int64
	start, end time.Time
	err        error
}

// killBook is the workers' bookkeeping: for each checkout, the statuses
// its hold may have in the end given the answers ("" : no hold).
type killBook struct {
	mu    sync.Mutex
	may   map[int64]map[uuid.UUID][]holdfast.Status
	ops   []killOp
	n     map[int64]int
	unk   int
	refus int
}

func (b *killBook) record(shop int64, id uuid.UUID, start time.Time, err error, applied holdfast.Status, prior ...holdfast.Status) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ops = append(b.ops, killOp{shop, start, time.Now(), err})
	switch {
	case err == nil:
		b.may[shop][id] = []holdfast.Status{applied}
		b.n[shop]++
		return true
	case errors.Is(err, holdfast.ErrOutcomeUnknown):
		b.may[shop][id] = append(prior, applied)
		b.unk++
	case errors.Is(err, holdfast.ErrUnavailable):
		b.may[shop][id] = prior
		b.refus++
	default:
		// Neither applied, refused retriably nor unknown: recorded as
		// applied-or-not, and reported below as an untruthful answer.
		b.may[shop][id] = append(prior, applied)
	}
	return false
}

func (b *killBook) count(shop int64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n[shop]
}

func runKills(t *testing.T, x, y *killPod, cases []killCase) {
	ctx := context.Background()
	m := newMap(t)
	r, err := pods.New(ctx, m, []pods.Pod{x.pod, y.pod}, pods.Config{ProbeInterval: 50 * time.Millisecond, MoveWait: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Stop(cctx)
	})
	r.Start(ctx)
	byName := map[string]*killPod{"x": x, "y": y}
	stores := map[string]pods.MoveStore{"x": x.store, "y": y.store}
	const stockN = 1_000_000
	for shop, pod := range map[int64]string{1: "x", 2: "x", 3: "y"} {
		if _, err := m.Assign(ctx, shop, pod); err != nil {
			t.Fatal(err)
		}
		stock(t, r, shop, stockN)
	}
	fill(t, r, 1, 50)
	book := &killBook{may: map[int64]map[uuid.UUID][]holdfast.Status{1: {}, 2: {}, 3: {}}, n: map[int64]int{}}
	// down: when each pod's server was down, until its shop traded again.
	type window struct {
		pod      string
		from, to time.Time
	}
	var down []window

	var (
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	startWorkers := func() {
		stop.Store(false)
		for w, shop := range []int64{1, 1, 1, 2, 3} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
				for !stop.Load() {
					p := cart(shop)
					p.TTL = time.Hour
					start := time.Now()
					_, err := r.Reserve(ctx, p)
					if !book.record(shop, p.CheckoutID, start, err, holdfast.StatusHeld, "") {
						time.Sleep(5 * time.Millisecond) // a client's pause before retrying
						continue
					}
					start = time.Now()
					ok := true
					switch rnd.IntN(5) {
					case 3:
						// Left to expire: a sweeper takes it.
						_, err := r.Extend(ctx, shop, p.CheckoutID, time.Second)
						ok = book.record(shop, p.CheckoutID, start, err, holdfast.StatusExpired, holdfast.StatusHeld)
					case 0, 1:
						_, err := r.Claim(ctx, shop, p.CheckoutID)
						ok = book.record(shop, p.CheckoutID, start, err, holdfast.StatusClaimed, holdfast.StatusHeld)
					case 2:
						_, err := r.Release(ctx, shop, p.CheckoutID)
						ok = book.record(shop, p.CheckoutID, start, err, holdfast.StatusReleased, holdfast.StatusHeld)
					}
					if !ok {
						time.Sleep(5 * time.Millisecond)
					}
				}
			}()
		}
	}
	stopWorkers := func() {
		stop.Store(true)
		wg.Wait()
	}
	// tradingAfter waits until shop's last answer is a success of an
	// operation started after at.
	tradingAfter := func(shop int64, at time.Time, what string) time.Time {
		t.Helper()
		var when time.Time
		waitFor(t, func() bool {
			book.mu.Lock()
			defer book.mu.Unlock()
			for i := len(book.ops) - 1; i >= 0; i-- {
				if o := book.ops[i]; o.shop == shop {
					if o.err == nil && o.start.After(at) {
						when = o.end
						return true
					}
					return false
				}
			}
			return false
		}, what)
		return when
	}
	t.Cleanup(stopWorkers)

	for _, c := range cases {
		pl, err := m.Lookup(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		from := pl.Pod
		to := map[string]string{"x": "y", "y": "x"}[from]
		victim := byName[from]
		if c.victim == "target" {
			victim = byName[to]
		}
		if victim.kill == nil {
			t.Fatalf("%s: pod %s's server cannot be killed here", c, victim.name)
		}
		other := map[string]int64{"x": 3, "y": 2}[victim.name] // the shop of the pod that stays up
		mine := map[string]int64{"x": 2, "y": 3}[victim.name]

		startWorkers()
		began := time.Now()
		m1, mo := book.count(1), book.count(other)
		waitFor(t, func() bool { return book.count(1) >= m1+40 && book.count(other) >= mo+20 }, "trading before the move")
		// The marks before the move (a pod the shop moved away from
		// earlier keeps its gone mark): a move that undid itself leaves
		// them so.
		marks := map[string]string{}
		for name, st := range stores {
			if marks[name], err = st.FenceState(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		moveAt := time.Now()
		var killedAt time.Time
		kill := func() {
			killedAt = time.Now()
			victim.kill(t)
		}
		p := pods.MoveParams{ShopID: 1, To: to, Stores: stores, Router: r, Method: c.method, PurgeDelay: 200 * time.Millisecond}
		hook := func(string) error { return nil }
		if c.point == "streaming" {
			p.BeforeFence = func(context.Context) error { kill(); return nil }
		} else {
			hook = func(step string) error {
				if step == c.point {
					kill()
				}
				return nil
			}
		}
		rep, err := pods.MoveWithHook(ctx, p, hook)
		failedAt := time.Now()
		if killedAt.IsZero() {
			t.Fatalf("%s: the move ended before the kill: %v", c, err)
		}
		if err == nil {
			t.Fatalf("%s: the move succeeded", c)
		}
		t.Logf("%s: the move failed %v after the kill: %v", c, failedAt.Sub(killedAt).Round(time.Millisecond), err)
		// Killed before the gone mark, the move does not switch: it undid
		// itself, nothing left (an untyped error), or could not
		// (ErrMoveIncomplete). Killed after it, the move switches (the map
		// is up): the source dead, it answers its report and the error of
		// a cleanup (its stream's end, the purge); the target dead, it
		// could not accept the shop: ErrMoveUnresolved. Either way Abort
		// resolves it onto the target.
		incomplete := errors.Is(err, pods.ErrMoveIncomplete)
		unresolved := errors.Is(err, pods.ErrMoveUnresolved)
		now, lerr := m.Lookup(ctx, 1)
		if lerr != nil {
			t.Fatal(lerr)
		}
		switched := now.Pod == to
		if switched != (c.point == "gone") || switched != (rep != nil) {
			t.Errorf("%s: the map places shop 1 on %s (switched %v), the move's report %v; want a switch, reported, only when killed after the gone mark", c, now.Pod, switched, rep != nil)
		}
		if unresolved != (c.point == "gone" && c.victim == "target") {
			t.Errorf("%s: ErrMoveUnresolved %v, want it only when the target dies after the gone mark", c, unresolved)
		}
		// The pod down for a while: the shops of the pod that stays up
		// trade meanwhile (checked below, from the answers).
		mark := book.count(other)
		waitFor(t, func() bool { return book.count(other) >= mark+20 }, "the other pod's shop trading during the outage")
		victim.restart(t)
		upAt := time.Now()
		back := tradingAfter(mine, upAt, "the restarted pod's own shop trading again")
		down = append(down, window{victim.name, killedAt, back})

		if !incomplete && !switched {
			for name, st := range stores {
				if fs, err := st.FenceState(ctx, 1); err != nil || fs != marks[name] {
					t.Errorf("%s: the move failed without ErrMoveIncomplete, but shop 1 is marked %q on %s, was %q (%v)", c, fs, name, marks[name], err)
				}
				if kp := byName[name]; kp.streams != nil {
					if n := kp.streams(t); n != 0 {
						t.Errorf("%s: the move failed without ErrMoveIncomplete, but pod %s keeps %d subscriptions, publications or slots", c, name, n)
					}
				}
			}
		}
		switch {
		case c.then == "abort" || switched:
			ab, err := pods.Abort(ctx, m, stores, 1)
			if err != nil {
				t.Fatalf("%s: abort: %v", c, err)
			}
			t.Logf("%s: abort: %+v", c, *ab)
		case c.then == "resume":
			_, err := pods.Move(ctx, pods.MoveParams{ShopID: 1, To: to, Stores: stores, Router: r, Method: c.method, PurgeDelay: 200 * time.Millisecond})
			if errors.Is(err, pods.ErrMoveRefused) {
				// A leftover of the killed move (a copy marked incoming):
				// pods abort first, as the error says.
				t.Logf("%s: the move again: %v", c, err)
				ab, aerr := pods.Abort(ctx, m, stores, 1)
				if aerr != nil {
					t.Fatalf("%s: abort: %v", c, aerr)
				}
				t.Logf("%s: abort: %+v", c, *ab)
				_, err = pods.Move(ctx, pods.MoveParams{ShopID: 1, To: to, Stores: stores, Router: r, Method: c.method, PurgeDelay: 200 * time.Millisecond})
			}
			if err != nil {
				t.Fatalf("%s: the move again: %v", c, err)
			}
		}
		for _, kp := range byName {
			if kp.streams != nil {
				if n := kp.streams(t); n != 0 {
					t.Errorf("%s: pod %s keeps %d subscriptions, publications or slots after the %s", c, kp.name, n, c.then)
				}
			}
		}
		resolved := time.Now()
		tradingAfter(1, resolved, "shop 1 trading after the "+c.then)
		home := from
		if c.then == "resume" || switched {
			home = to
		}
		if pl, err := m.Lookup(ctx, 1); err != nil || pl.Pod != home {
			t.Fatalf("%s: shop 1 placed %+v, %v; want pod %s", c, pl, err, home)
		}
		stopWorkers()

		// Latency of the pod that stayed up: its shop's p99 before the move,
		// while it ran, and during the other pod's outage (logged only).
		book.mu.Lock()
		var before, during, outage []time.Duration
		for _, o := range book.ops {
			if o.shop != other || o.err != nil {
				continue
			}
			d := o.end.Sub(o.start)
			switch {
			case o.start.After(began) && o.end.Before(moveAt):
				before = append(before, d)
			case o.start.After(moveAt) && o.end.Before(killedAt):
				during = append(during, d)
			case o.start.After(killedAt) && o.end.Before(back):
				outage = append(outage, d)
			}
		}
		book.mu.Unlock()
		t.Logf("%s: shop %d on the pod that stayed up: p99 %v before the move (%d ops), %v while it ran (%d), %v during the outage (%d); outage %v",
			c, other, p99(before), len(before), p99(during), len(during), p99(outage), len(outage), back.Sub(killedAt).Round(time.Millisecond))
		checkKilled(t, c.String(), m, byName, book, home)
	}

	// Answers: errors only for the shops of a pod that was down (or, for
	// shop 1, fenced), and only the truthful kinds.
	book.mu.Lock()
	defer book.mu.Unlock()
	errs := map[int64]int{}
	for _, o := range book.ops {
		if o.err == nil {
			continue
		}
		errs[o.shop]++
		if !errors.Is(o.err, holdfast.ErrUnavailable) && !errors.Is(o.err, holdfast.ErrOutcomeUnknown) {
			t.Errorf("shop %d: answer %v is neither refused retriably nor outcome unknown", o.shop, o.err)
		}
		if o.shop == 1 {
			continue
		}
		pod := map[int64]string{2: "x", 3: "y"}[o.shop]
		if !slices.ContainsFunc(down, func(w window) bool { return w.pod == pod && o.end.After(w.from) && o.start.Before(w.to) }) {
			t.Errorf("shop %d on pod %s: an error while its pod was up (the other pod down or a move running): %v", o.shop, pod, o.err)
		}
	}
	total := 0
	for _, n := range book.n {
		total += n
	}
	t.Logf("%d kills: %d operations acknowledged, %d refused retriably, %d outcome unknown; errors by shop %v", len(cases), total, book.refus, book.unk, errs)
}

// checkKilled checks, workers stopped, that every answer is true of the
// final state: shop 1 on home (nothing of it elsewhere), shops 2 and 3
// on their pods; a claim counted once in the ledger and the level; the
// feed of shop 1 without a gap; the invariant on both pods.
func checkKilled(t *testing.T, c string, m *podmap.Map, byName map[string]*killPod, book *killBook, home string) {
	t.Helper()
	ctx := context.Background()
	podOf := map[int64]string{1: home, 2: "x", 3: "y"}
	book.mu.Lock()
	defer book.mu.Unlock()
	// Holds left to expire (1 s) are expired by their pod's sweeper.
	waitFor(t, func() bool {
		for shop, ids := range book.may {
			for id, may := range ids {
				if len(may) == 1 && may[0] == holdfast.StatusExpired {
					h, err := byName[podOf[shop]].eng.Hold(ctx, shop, id)
					if errors.Is(err, holdfast.ErrNotFound) {
						continue // lost: reported below
					}
					if err != nil || h.Status == holdfast.StatusHeld {
						return false
					}
				}
			}
		}
		return true
	}, c+": the sweepers expiring the holds left to expire")
	for shop, ids := range book.may {
		p := byName[podOf[shop]]
		claimed, claimedMay := int64(0), int64(0)
		for id, may := range ids {
			got := holdfast.Status("")
			h, err := p.eng.Hold(ctx, shop, id)
			switch {
			case errors.Is(err, holdfast.ErrNotFound):
			case err != nil:
				t.Fatalf("%s: hold %s of shop %d: %v", c, id, shop, err)
			default:
				got = h.Status
			}
			ok := slices.Contains(may, got)
			if !ok && got == holdfast.StatusExpired && slices.Contains(may, holdfast.StatusHeld) && slices.Contains(may, holdfast.StatusExpired) {
				ok = true
			}
			if !ok {
				t.Errorf("%s: checkout %s of shop %d: %q on pod %s, answers allow %q", c, id, shop, got, p.name, may)
			}
			if got == holdfast.StatusClaimed {
				claimed++
			}
			if slices.Contains(may, holdfast.StatusClaimed) {
				claimedMay++
			}
		}
		cl := p.count(t, fmt.Sprintf("SELECT count(*) FROM holds WHERE shop_id = %d AND status = 'claimed'", shop))
		if cl != claimed {
			t.Errorf("%s: shop %d: %d claimed holds on %s, %d of the workers' checkouts", c, shop, cl, p.name, claimed)
		}
		if l := p.count(t, fmt.Sprintf("SELECT count(*) FROM inventory_ledger WHERE shop_id = %d AND claim", shop)); l != cl {
			t.Errorf("%s: shop %d: %d claim ledger rows on %s, %d claimed holds: a claim applied twice or lost", c, shop, l, p.name, cl)
		}
		lv, err := p.eng.Level(ctx, key(shop))
		if err != nil {
			t.Fatal(err)
		}
		if int64(lv.Available) != 1_000_000-cl {
			t.Errorf("%s: shop %d: available %d, want %d - %d claimed", c, shop, lv.Available, 1_000_000, cl)
		}
	}
	// Nothing of shop 1 left on the other pod (discarded, or purged).
	for name, p := range byName {
		if name == home {
			continue
		}
		waitFor(t, func() bool {
			return p.count(t, "SELECT count(*) FROM holds WHERE shop_id = 1") == 0
		}, c+": shop 1's rows gone from pod "+name)
	}
	// The feed: one continuous cursor sequence.
	hp := byName[home]
	waitFor(t, func() bool {
		_, err := hp.eng.SequenceEvents(ctx)
		return err == nil && hp.count(t, "SELECT count(*) FROM holdfast_events WHERE shop_id = 1 AND seq IS NULL") == 0
	}, c+": shop 1's events sequenced")
	var cursor int64
	for {
		evs, err := hp.eng.Events(ctx, 1, cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.Cursor != cursor+1 {
				t.Fatalf("%s: shop 1's feed: after cursor %d came %d", c, cursor, e.Cursor)
			}
			cursor = e.Cursor
		}
	}
	for name, p := range byName {
		checkInvariant(t, name, p.eng)
	}
}

// p99 is the 99th percentile of ds (0 when empty).
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)].Round(100 * time.Microsecond)
}
