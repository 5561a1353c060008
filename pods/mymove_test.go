package pods_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mymove"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/postgres/podmap"
)

// mariaPod is one MariaDB pod of a test: its own database on the private
// server (mysqltest), its engine.
type mariaPod struct {
	name string
	db   *sql.DB
	eng  *mysql.Client
}

func newMariaPod(t *testing.T, name string, cfg holdfast.Config) *mariaPod {
	t.Helper()
	d := mysqltest.DB(t, 16)
	eng, err := mysql.New(d.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &mariaPod{name: name, db: d.DB, eng: eng}
}

func (p *mariaPod) pod() pods.Pod {
	return pods.Pod{Name: p.name, Engine: p.eng, Ping: p.db.PingContext}
}

func (p *mariaPod) count(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := p.db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// mariaMoveSetup is two MariaDB pods (two databases of one server), a map
// and a router over them, and the pods' move stores.
type mariaMoveSetup struct {
	a, b   *mariaPod
	m      *podmap.Map
	r      *pods.Router
	stores map[string]pods.MoveStore
}

func newMariaMoveSetup(t *testing.T, cfg pods.Config) *mariaMoveSetup {
	t.Helper()
	ec := holdfast.Config{SweepInterval: 100 * time.Millisecond}
	s := &mariaMoveSetup{a: newMariaPod(t, "a", ec), b: newMariaPod(t, "b", ec), m: newMap(t)}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r, err := pods.New(context.Background(), s.m, []pods.Pod{s.a.pod(), s.b.pod()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Stop(ctx)
	})
	s.r = r
	s.stores = map[string]pods.MoveStore{"a": mymove.New(s.a.db), "b": mymove.New(s.b.db)}
	return s
}

// TestMariaMoveUnderLoad is TestMoveUnderLoad on MariaDB pods: shop 1
// moves from a to b (HOLDFAST_MOVE_BIG=1: 21 times, back and forth) while
// four workers reserve, claim, release and leave holds to expire through
// the router and a reader follows the event feed; b has a shop of its own
// whose ids collide with the copied ones. Every acknowledged operation is
// on b afterwards exactly once, the invariant holds on both pods, the
// feed's cursors run on without a gap or a repeat, and a holds nothing of
// the shop after the purge.
func TestMariaMoveUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newMariaMoveSetup(t, pods.Config{})
	s.r.Start(ctx)
	for shop, pod := range map[int64]string{1: "a", 2: "b"} {
		if _, err := s.m.Assign(ctx, shop, pod); err != nil {
			t.Fatal(err)
		}
	}
	const stockN = 1_000_000
	stock(t, s.r, 1, stockN)
	stock(t, s.r, 2, stockN)
	fill(t, s.r, 1, 100)
	fill(t, s.r, 2, 100)
	shop2Held := s.b.count(t, "SELECT count(*) FROM holds WHERE shop_id = 2 AND status = 'held'")

	type outcome struct {
		status  holdfast.Status
		unknown bool
	}
	var (
		mu        sync.Mutex
		acked     = map[uuid.UUID]outcome{}
		n         atomic.Int64
		refused   atomic.Int64
		stop      atomic.Bool
		sequenced atomic.Bool
		gaps      []string
		lastSeen  atomic.Int64
	)
	set := func(id uuid.UUID, o outcome) {
		mu.Lock()
		acked[id] = o
		mu.Unlock()
	}
	judge := func(id uuid.UUID, err error, applied holdfast.Status) bool {
		switch {
		case err == nil:
			set(id, outcome{status: applied})
			n.Add(1)
			return true
		case errors.Is(err, holdfast.ErrOutcomeUnknown):
			set(id, outcome{unknown: true})
		case errors.Is(err, holdfast.ErrUnavailable):
			refused.Add(1)
		default:
			t.Errorf("checkout %s: %v", id, err)
		}
		return false
	}
	var g errgroup.Group
	for w := range 4 {
		g.Go(func() error {
			rnd := rand.New(rand.NewPCG(uint64(w), 28))
			for !stop.Load() {
				p := cart(1)
				if !judge(p.CheckoutID, func() error { _, err := s.r.Reserve(ctx, p); return err }(), holdfast.StatusHeld) {
					continue
				}
				switch rnd.IntN(5) {
				case 3:
					_, err := s.r.Extend(ctx, 1, p.CheckoutID, time.Second)
					judge(p.CheckoutID, err, holdfast.StatusExpired)
				case 0, 1:
					_, err := s.r.Claim(ctx, 1, p.CheckoutID)
					judge(p.CheckoutID, err, holdfast.StatusClaimed)
				case 2:
					_, err := s.r.Release(ctx, 1, p.CheckoutID)
					judge(p.CheckoutID, err, holdfast.StatusReleased)
				}
			}
			return nil
		})
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		cursor := int64(0)
		for {
			last := sequenced.Load()
			evs, err := s.r.Events(ctx, 1, cursor, 1000)
			if err == nil {
				for _, e := range evs {
					if e.Cursor != cursor+1 {
						mu.Lock()
						gaps = append(gaps, "after "+itoa(cursor)+" came "+itoa(e.Cursor))
						mu.Unlock()
					}
					cursor = e.Cursor
				}
				lastSeen.Store(cursor)
			}
			if last && len(evs) == 0 {
				return
			}
		}
	}()
	waitFor(t, func() bool { return n.Load() >= 40 && lastSeen.Load() > 0 }, "40 operations and events read before the move")
	seenAtMove := lastSeen.Load()
	moves := 1
	if os.Getenv("HOLDFAST_MOVE_BIG") != "" {
		moves = 21
	}
	var rep *pods.MoveReport
	var fences []time.Duration
	for i := range moves {
		to := "b"
		if i%2 == 1 {
			to = "a"
		}
		var err error
		rep, err = pods.Move(ctx, pods.MoveParams{ShopID: 1, To: to, Stores: s.stores, Router: s.r, PurgeDelay: 200 * time.Millisecond})
		if err != nil {
			stop.Store(true)
			_ = g.Wait()
			t.Fatalf("move %d to %s: %v", i+1, to, err)
		}
		fences = append(fences, rep.Fence)
		at := n.Load()
		waitFor(t, func() bool { return n.Load() >= at+40 }, "40 operations after the move")
	}
	slices.Sort(fences)
	t.Logf("%d moves under load: fence min %v, median %v, max %v", moves, fences[0], fences[len(fences)/2], fences[len(fences)-1])
	stop.Store(true)
	_ = g.Wait()
	waitFor(t, func() bool {
		left := 0
		mu.Lock()
		defer mu.Unlock()
		for id, o := range acked {
			if o.status == holdfast.StatusExpired {
				if h, err := s.b.eng.Hold(ctx, 1, id); err != nil || h.Status == holdfast.StatusHeld {
					left++
				}
			}
		}
		return left == 0
	}, "b's sweeper expiring the holds left to expire")
	waitFor(t, func() bool {
		_, err := s.b.eng.SequenceEvents(ctx)
		return err == nil && s.b.count(t, "SELECT count(*) FROM holdfast_events WHERE shop_id = 1 AND seq IS NULL") == 0
	}, "b sequences shop 1's events")
	sequenced.Store(true)
	<-readerDone
	t.Logf("move: fence %v (wait %v, copy %v, verify %v, switch %v), %d rows, purged %d; %d operations acknowledged, %d refused retriably",
		rep.Fence, rep.FenceWait, rep.Copy, rep.Verify, rep.Switch, rep.Rows, rep.Purged, n.Load(), refused.Load())

	claimed, unknown := 0, 0
	for id, o := range acked {
		h, err := s.b.eng.Hold(ctx, 1, id)
		switch {
		case o.unknown:
			unknown++
			continue
		case err != nil:
			t.Errorf("acknowledged checkout %s (%s): not on b: %v", id, o.status, err)
		case o.status == holdfast.StatusExpired:
			if h.Status != holdfast.StatusExpired {
				t.Errorf("checkout %s left to expire: %s on b", id, h.Status)
			}
		case h.Status != o.status:
			t.Errorf("checkout %s: %s on b, acknowledged %s", id, h.Status, o.status)
		}
		if o.status == holdfast.StatusClaimed {
			claimed++
		}
	}
	claimedB := s.b.count(t, "SELECT count(*) FROM holds WHERE shop_id = 1 AND status = 'claimed'")
	if claimedB < int64(claimed) || claimedB > int64(claimed+unknown) {
		t.Errorf("claimed holds on b %d, acknowledged %d (+%d unknown)", claimedB, claimed, unknown)
	}
	if l := s.b.count(t, "SELECT count(*) FROM inventory_ledger WHERE shop_id = 1 AND claim"); l != claimedB {
		t.Errorf("claim ledger rows on b %d, claimed holds %d: a claim applied twice or lost", l, claimedB)
	}
	lv, err := s.r.Level(ctx, key(1))
	if err != nil {
		t.Fatal(err)
	}
	if int64(lv.Available) != stockN-claimedB {
		t.Errorf("available %d, want %d - %d claimed", lv.Available, stockN, claimedB)
	}
	if h := s.b.count(t, "SELECT count(*) FROM holds WHERE shop_id = 1"); h < int64(100+len(acked)-unknown) {
		t.Errorf("holds of shop 1 on b: %d, want at least %d", h, 100+len(acked)-unknown)
	}
	if len(gaps) > 0 {
		t.Errorf("the reader saw gaps or repeats: %v", gaps)
	}
	var total int64
	for {
		evs, err := s.r.Events(ctx, 1, total, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.Cursor != total+1 {
				t.Fatalf("after cursor %d came %d", total, e.Cursor)
			}
			total = e.Cursor
		}
	}
	if end := lastSeen.Load(); end <= seenAtMove || end > total {
		t.Errorf("reader: at cursor %d when the move began, ended at %d; the feed has %d events", seenAtMove, end, total)
	}
	t.Logf("feed: reader at %d when the move began, ended at %d, the feed has %d events, no gap or repeat", seenAtMove, lastSeen.Load(), total)
	// The copied ids stay below b's new ones: AUTO_INCREMENT was raised.
	if maxCopied, newest := s.b.count(t, "SELECT MAX(id) FROM inventory_ledger WHERE shop_id = 1"), s.b.count(t, "SELECT MAX(id) FROM inventory_ledger WHERE shop_id = 2"); newest <= 0 || maxCopied <= 0 {
		t.Errorf("ledger ids on b: shop 1 max %d, shop 2 max %d", maxCopied, newest)
	}
	if st, _ := s.stores["a"].FenceState(ctx, 1); st != pods.FenceGone {
		t.Errorf("shop 1 on a: %q, want gone", st)
	}
	for _, tbl := range []string{"holds", "reserved_quantities", "inventory_ledger", "holdfast_events", "inventory_levels", "audit_log"} {
		if c := s.a.count(t, "SELECT count(*) FROM "+tbl+" WHERE shop_id = 1"); c != 0 {
			t.Errorf("a still holds %d rows of shop 1 in %s", c, tbl)
		}
	}
	if c := s.b.count(t, "SELECT count(*) FROM holds WHERE shop_id = 2 AND status = 'held'"); c != shop2Held {
		t.Errorf("shop 2 on b: %d held, was %d", c, shop2Held)
	}
	fill(t, s.r, 2, 5)
	checkInvariant(t, "a", s.a.eng)
	checkInvariant(t, "b", s.b.eng)
	if _, err := s.a.eng.Reserve(ctx, cart(1)); !errors.Is(err, holdfast.ErrShopMoved) {
		t.Errorf("reserve of shop 1 on a after the move: %v, want ErrShopMoved", err)
	}
}

// TestMariaMoveAbort is TestMoveAbort on MariaDB pods: a move stopped
// after its copy, or after marking the source gone, is resolved by Abort
// from the map (the target's copy deleted, the source unchanged and
// serving); a move onto a pod holding rows of the shop is refused and
// changes nothing.
func TestMariaMoveAbort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newMariaMoveSetup(t, pods.Config{MoveWait: 100 * time.Millisecond})
	if _, err := s.m.Assign(ctx, 1, "a"); err != nil {
		t.Fatal(err)
	}
	stock(t, s.r, 1, 100)
	fill(t, s.r, 1, 10)
	src, dst := s.stores["a"], s.stores["b"]

	// Stopped after the copy.
	f, err := src.Fence(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := src.Copy(ctx, f, dst, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := dst.FenceState(ctx, 1); st != pods.FenceIncoming || rows == 0 {
		t.Fatalf("target after the copy: %q, %d rows", st, rows)
	}
	if _, err := s.b.eng.Reserve(ctx, cart(1)); !errors.Is(err, holdfast.ErrShopMoved) {
		t.Fatalf("reserve on the target of an incoming shop: %v, want ErrShopMoved", err)
	}
	if _, err := s.r.Reserve(ctx, cart(1)); err != nil {
		t.Fatalf("the source serves the shop while the copy waits: %v", err)
	}
	if _, err := pods.Move(ctx, pods.MoveParams{ShopID: 1, To: "b", Stores: s.stores, Router: s.r}); !errors.Is(err, pods.ErrMoveRefused) {
		t.Fatalf("a move over an unfinished one: %v, want ErrMoveRefused", err)
	}
	ab, err := pods.Abort(ctx, s.m, s.stores, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ab.Discarded) != 1 || ab.Discarded[0] != "b" {
		t.Fatalf("abort: %+v", ab)
	}
	for _, tbl := range []string{"holds", "inventory_ledger", "holdfast_events", "holdfast_shop_fences"} {
		if c := s.b.count(t, "SELECT count(*) FROM "+tbl+" WHERE shop_id = 1"); c != 0 {
			t.Fatalf("the target keeps %d rows of shop 1 in %s after the abort", c, tbl)
		}
	}

	// Stopped after marking the source gone, before the switch.
	before, err := src.Digest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	f, err = src.Fence(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Copy(ctx, f, dst, "a"); err != nil {
		t.Fatal(err)
	}
	if err := src.Tombstone(ctx, 1, "b"); err != nil {
		t.Fatal(err)
	}
	_ = f.Release(ctx)
	if _, err := s.r.Reserve(ctx, cart(1)); !errors.Is(err, holdfast.ErrShopMoved) || !errors.Is(err, holdfast.ErrUnavailable) {
		t.Fatalf("reserve of a shop stuck mid-move: %v, want ErrShopMoved (retriable)", err)
	}
	ab, err = pods.Abort(ctx, s.m, s.stores, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !ab.Restored || len(ab.Discarded) != 1 {
		t.Fatalf("abort: %+v", ab)
	}
	after, err := src.Digest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffDigests(before, after); d != "" {
		t.Fatalf("the source changed across the aborted move: %s", d)
	}
	if _, err := s.r.Reserve(ctx, cart(1)); err != nil {
		t.Fatalf("reserve after the abort: %v", err)
	}

	// A target that holds rows of the shop: refused, nothing changed.
	stock(t, s.b.eng, 1, 5)
	before, _ = src.Digest(ctx, 1)
	if _, err := pods.Move(ctx, pods.MoveParams{ShopID: 1, To: "b", Stores: s.stores, Router: s.r}); !errors.Is(err, pods.ErrMoveRefused) {
		t.Fatalf("a move onto a pod holding the shop's rows: %v, want ErrMoveRefused", err)
	}
	after, _ = src.Digest(ctx, 1)
	if d := diffDigests(before, after); d != "" {
		t.Fatalf("the source changed across the refused move: %s", d)
	}
	if st, _ := dst.FenceState(ctx, 1); st != pods.FenceNone {
		t.Fatalf("target mark after the refused move: %q", st)
	}
	if _, err := s.r.Reserve(ctx, cart(1)); err != nil {
		t.Fatalf("reserve after the refused moves: %v", err)
	}
	checkInvariant(t, "a", s.a.eng)
	checkInvariant(t, "b", s.b.eng)
}

// TestMariaMoveWebhooks: a MariaDB shop with a webhook endpoint and a dead
// letter moves (migration 020 keyed their tables by shop and id): the
// endpoint arrives with its id, cursor and retry state, beside the
// target's own endpoint of another shop with the same id, its dead letter
// with it, and nothing of the shop stays on the source.
func TestMariaMoveWebhooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newMariaMoveSetup(t, pods.Config{})
	if _, err := s.m.Assign(ctx, 1, "a"); err != nil {
		t.Fatal(err)
	}
	stock(t, s.r, 1, 100)
	fill(t, s.r, 1, 3)
	for _, q := range []string{
		"INSERT INTO webhook_endpoints (id, shop_id, url, secret, `cursor`, attempts, last_error, created_at, next_at) VALUES (1, 1, 'https://example.com/a', 's', 2, 3, 'answered 500', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))",
		"INSERT INTO webhook_dead_letters (id, endpoint_id, shop_id, `cursor`, event, attempts, last_error, dead_at) VALUES (1, 1, 1, 1, '{}', 4, 'answered 500', UTC_TIMESTAMP(6))",
	} {
		if _, err := s.a.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	// Pod b's own endpoint and dead letter of shop 2, with the same ids.
	for _, q := range []string{
		"INSERT INTO webhook_endpoints (id, shop_id, url, secret, created_at) VALUES (1, 2, 'https://example.com/b', 's', UTC_TIMESTAMP(6))",
		"INSERT INTO webhook_dead_letters (id, endpoint_id, shop_id, `cursor`, event, attempts, last_error, dead_at) VALUES (1, 1, 2, 1, '{}', 1, 'x', UTC_TIMESTAMP(6))",
	} {
		if _, err := s.b.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	const endpoint = "SELECT CONCAT(id, ' ', url, ' ', `cursor`, ' ', attempts, ' ', last_error) FROM webhook_endpoints WHERE shop_id = 1"
	var want string
	if err := s.a.db.QueryRow(endpoint).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Move(ctx, pods.MoveParams{ShopID: 1, To: "b", Stores: s.stores, Router: s.r, PurgeDelay: time.Millisecond}); err != nil {
		t.Fatalf("a move of a shop with a webhook endpoint: %v", err)
	}
	var got string
	if err := s.b.db.QueryRow(endpoint).Scan(&got); err != nil || got != want {
		t.Fatalf("shop 1's endpoint on b: %q, %v; want %q as on a", got, err, want)
	}
	if n := s.b.count(t, "SELECT count(*) FROM webhook_dead_letters WHERE shop_id = 1 AND endpoint_id = 1 AND attempts = 4"); n != 1 {
		t.Fatalf("shop 1's dead letter on b: %d rows", n)
	}
	if n := s.b.count(t, "SELECT count(*) FROM webhook_endpoints WHERE shop_id = 2 AND id = 1"); n != 1 {
		t.Fatalf("b's own endpoint 1 of shop 2: %d rows", n)
	}
	for _, tbl := range []string{"webhook_endpoints", "webhook_dead_letters"} {
		if n := s.a.count(t, "SELECT count(*) FROM "+tbl+" WHERE shop_id = 1"); n != 0 {
			t.Fatalf("shop 1's %d rows stay in a's %s after the move's purge", n, tbl)
		}
	}
	if _, err := s.r.Reserve(ctx, cart(1)); err != nil {
		t.Fatalf("reserve after the move: %v", err)
	}
	checkInvariant(t, "a", s.a.eng)
	checkInvariant(t, "b", s.b.eng)
}

// TestMariaMoveFence measures the fence of an idle MariaDB shop's move:
// 1,000 active holds (some 3,000 rows); HOLDFAST_MOVE_BIG=1: 5,000 active
// holds and 17,500 more ledger rows with their events, some 50,000 rows,
// moved there and back. Each move is verified by Move itself (count and hash per table).
func TestMariaMoveFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	holds, history := 1_000, 0
	if os.Getenv("HOLDFAST_MOVE_BIG") != "" {
		holds, history = 5_000, 17_500
	}
	s := newMariaMoveSetup(t, pods.Config{})
	const shop = 10
	if _, err := s.m.Assign(ctx, shop, "a"); err != nil {
		t.Fatal(err)
	}
	stock(t, s.r, shop, 1_000_000)
	fill(t, s.r, shop, holds)
	for done := 0; done < history; done += 2_500 {
		// History of no-op stock changes, as the engine writes them: each
		// ledger row fires its event.
		if _, err := s.a.db.Exec(`INSERT INTO inventory_ledger (shop_id, inventory_item_id, location_id, delta, available_after, reason, created_at)
			SELECT ?, 1, 1, 0, l.available, 'history', UTC_TIMESTAMP(6) FROM inventory_levels l
			JOIN JSON_TABLE(CONCAT('[', REPEAT('1,', 2499), '1]'), '$[*]' COLUMNS (x INT PATH '$')) j
			WHERE l.shop_id = ? AND l.inventory_item_id = 1 AND l.location_id = 1`, shop, shop); err != nil {
			t.Fatal(err)
		}
	}
	for _, to := range []string{"b", "a"} {
		rep, err := pods.Move(ctx, pods.MoveParams{ShopID: shop, To: to, Stores: s.stores, Router: s.r, PurgeDelay: time.Millisecond})
		if err != nil {
			t.Fatalf("move of shop %d to %s: %v", shop, to, err)
		}
		t.Logf("FENCE mariadb holds=%d %s→%s rows=%d fence=%dms (wait %dms copy %dms verify %dms switch %dms) purged=%d",
			holds, rep.From, rep.To, rep.Rows, rep.Fence.Milliseconds(), rep.FenceWait.Milliseconds(), rep.Copy.Milliseconds(),
			rep.Verify.Milliseconds(), rep.Switch.Milliseconds(), rep.Purged)
		if _, err := s.r.Reserve(ctx, cart(shop)); err != nil {
			t.Fatalf("reserve after the move to %s: %v", to, err)
		}
	}
	checkInvariant(t, "a", s.a.eng)
	checkInvariant(t, "b", s.b.eng)
}
