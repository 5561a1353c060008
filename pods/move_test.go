package pods_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pods"
	"github.com/holdfast/holdfast/postgres/pgmove"
	"github.com/holdfast/holdfast/postgres/podmap"
)

// moveSetup is two PostgreSQL pods (on two servers), a map and a router
// over them, and the pods' move stores.
type moveSetup struct {
	a, b   *podDB
	m      *podmap.Map
	r      *pods.Router
	stores map[string]pods.MoveStore
}

func newMoveSetup(t *testing.T, cfg pods.Config) *moveSetup {
	t.Helper()
	// Sweeps every 100 ms: holds left to expire in a test expire soon.
	ec := holdfast.Config{SweepInterval: 100 * time.Millisecond}
	s := &moveSetup{a: newPodWith(t, "a", serverA, ec), b: newPodWith(t, "b", serverB, ec), m: newMap(t)}
	s.r = newRouter(t, s.m, cfg, s.a, s.b)
	s.stores = map[string]pods.MoveStore{"a": pgmove.New(s.a.pool), "b": pgmove.New(s.b.pool)}
	return s
}

// fill reserves n holds of one unit on shop's key through e, 8 at a time.
func fill(t *testing.T, e holdfast.Engine, shop int64, n int) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(8)
	for range n {
		g.Go(func() error {
			p := cart(shop)
			p.TTL = 10 * time.Minute
			_, err := e.Reserve(context.Background(), p)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("fill shop %d: %v", shop, err)
	}
}

func count(t *testing.T, p *podDB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := p.pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func checkInvariant(t *testing.T, name string, e holdfast.Engine) {
	t.Helper()
	rep, err := e.CheckInvariant(context.Background())
	if err != nil {
		t.Fatalf("pod %s: invariant: %v", name, err)
	}
	if len(rep.Violations) > 0 || len(rep.OverCommitted) > 0 || len(rep.Defects) > 0 {
		t.Fatalf("pod %s: invariant: %+v", name, rep)
	}
}

// TestMoveUnderLoad moves shop 1 from pod a to pod b (HOLDFAST_MOVE_BIG=1:
// 21 times, back and forth) while four workers
// reserve, claim and release on it through the router and a reader
// follows its event feed; pod b has a shop of its own whose ids collide
// with the copied ones. Every acknowledged operation is on b afterwards
// exactly once (holds, claims counted against the ledger and the level),
// the invariant holds on both pods, the feed's cursors run on without a
// gap or a repeat, and the source holds nothing of the shop after the
// purge.
func TestMoveUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newMoveSetup(t, pods.Config{})
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
	fill(t, s.r, 2, 100) // b's own ids, the same as the copied ones
	shop2Held := count(t, s.b, "SELECT count(*) FROM holds WHERE shop_id = 2 AND status = 'held'")

	type outcome struct {
		status  holdfast.Status
		unknown bool
	}
	var (
		mu      sync.Mutex
		acked   = map[uuid.UUID]outcome{}
		n       atomic.Int64
		refused atomic.Int64
		stop    atomic.Bool
		// sequenced: every event of shop 1 has its cursor; the reader then
		// reads to an empty page and ends
		sequenced atomic.Bool
		gaps      []string
		lastSeen  atomic.Int64
	)
	set := func(id uuid.UUID, o outcome) {
		mu.Lock()
		acked[id] = o
		mu.Unlock()
	}
	// judge records an operation's answer: applied, refused (nothing
	// applied), or unknown.
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
				p.TTL = time.Hour // held until the checks, however long the moves take
				if !judge(p.CheckoutID, func() error { _, err := s.r.Reserve(ctx, p); return err }(), holdfast.StatusHeld) {
					continue
				}
				switch rnd.IntN(5) {
				case 3:
					// A hold left to expire: the sweepers (the source's
					// before the move, the target's after) take it.
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
	// Shop 2 (on b) trades meanwhile, a reserve and its release at a
	// time: its latency before and during the moves is logged (never
	// asserted).
	type lat struct {
		at time.Time
		d  time.Duration
	}
	var lats []lat
	g.Go(func() error {
		for !stop.Load() {
			start := time.Now()
			p := cart(2)
			if _, err := s.r.Reserve(ctx, p); err != nil {
				t.Errorf("shop 2 reserve: %v", err)
				continue
			}
			if _, err := s.r.Release(ctx, 2, p.CheckoutID); err != nil {
				t.Errorf("shop 2 release: %v", err)
			}
			mu.Lock()
			lats = append(lats, lat{start, time.Since(start)})
			mu.Unlock()
		}
		return nil
	})
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
	waitFor(t, func() bool {
		mu.Lock()
		shop2 := len(lats)
		mu.Unlock()
		return n.Load() >= 40 && lastSeen.Load() > 0 && shop2 >= 40
	}, "40 operations and events read before the move, and 40 of shop 2's")
	seenAtMove := lastSeen.Load()
	// One move a → b; HOLDFAST_MOVE_BIG=1: 21, back and forth, ending on b.
	moves := 1
	if os.Getenv("HOLDFAST_MOVE_BIG") != "" {
		moves = 21
	}
	var rep *pods.MoveReport
	var fences []time.Duration
	type span struct{ from, to time.Time }
	var moving []span
	for i := range moves {
		to := "b"
		if i%2 == 1 {
			to = "a"
		}
		var err error
		began := time.Now()
		rep, err = pods.Move(ctx, pods.MoveParams{ShopID: 1, To: to, Stores: s.stores, Router: s.r, PurgeDelay: 200 * time.Millisecond})
		moving = append(moving, span{began, time.Now()})
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
	var before, during []time.Duration
	mu.Lock()
	for _, l := range lats {
		switch {
		case l.at.Before(moving[0].from):
			before = append(before, l.d)
		case slices.ContainsFunc(moving, func(m span) bool { return !l.at.Before(m.from) && l.at.Before(m.to) }):
			during = append(during, l.d)
		}
	}
	mu.Unlock()
	t.Logf("shop 2 on b (a reserve and its release): p99 %v before the moves (%d), %v during them (%d)", p99(before), len(before), p99(during), len(during))
	// The holds left to expire (1 s), those copied from a included, are
	// expired by b's sweeper.
	waitFor(t, func() bool {
		left := 0
		for id, o := range acked {
			if o.status == holdfast.StatusExpired {
				if h, err := s.b.eng.Hold(ctx, 1, id); err != nil || h.Status == holdfast.StatusHeld {
					left++
				}
			}
		}
		return left == 0
	}, "b's sweeper expiring the holds left to expire")
	// The events of the last operations are sequenced by b's worker; the
	// reader drains to an empty page after the stop.
	waitFor(t, func() bool {
		_, err := s.b.eng.SequenceEvents(ctx)
		pending := count(t, s.b, "SELECT count(*) FROM holdfast_events WHERE shop_id = 1 AND seq IS NULL")
		return err == nil && pending == 0
	}, "b sequences shop 1's events")
	sequenced.Store(true)
	<-readerDone
	t.Logf("move: fence %v (wait %v, copy %v, verify %v, switch %v), %d rows, purged %d; %d operations acknowledged, %d refused retriably",
		rep.Fence, rep.FenceWait, rep.Copy, rep.Verify, rep.Switch, rep.Rows, rep.Purged, n.Load(), refused.Load())

	// Every acknowledged operation, exactly as acknowledged, on b.
	claimed, expired := 0, 0
	for id, o := range acked {
		h, err := s.b.eng.Hold(ctx, 1, id)
		switch {
		case o.unknown:
			continue
		case err != nil:
			t.Errorf("acknowledged checkout %s (%s): not on b: %v", id, o.status, err)
		case o.status == holdfast.StatusExpired:
			// extended to 1 s: held until a sweeper expires it
			if h.Status != holdfast.StatusHeld && h.Status != holdfast.StatusExpired {
				t.Errorf("checkout %s left to expire: %s on b", id, h.Status)
			}
			if h.Status == holdfast.StatusExpired {
				expired++
			}
		case h.Status != o.status:
			t.Errorf("checkout %s: %s on b, acknowledged %s", id, h.Status, o.status)
		}
		if o.status == holdfast.StatusClaimed {
			claimed++
		}
	}
	t.Logf("%d holds left to expire were expired by a sweeper", expired)
	claimedB := count(t, s.b, "SELECT count(*) FROM holds WHERE shop_id = 1 AND status = 'claimed'")
	unknownClaims := 0
	for _, o := range acked {
		if o.unknown {
			unknownClaims++
		}
	}
	if claimedB < int64(claimed) || claimedB > int64(claimed+unknownClaims) {
		t.Errorf("claimed holds on b %d, acknowledged %d (+%d unknown)", claimedB, claimed, unknownClaims)
	}
	if l := count(t, s.b, "SELECT count(*) FROM inventory_ledger WHERE shop_id = 1 AND claim"); l != claimedB {
		t.Errorf("claim ledger rows on b %d, claimed holds %d: a claim applied twice or lost", l, claimedB)
	}
	lv, err := s.r.Level(ctx, key(1))
	if err != nil {
		t.Fatal(err)
	}
	if int64(lv.Available) != stockN-claimedB {
		t.Errorf("available %d, want %d - %d claimed", lv.Available, stockN, claimedB)
	}
	if h := count(t, s.b, "SELECT count(*) FROM holds WHERE shop_id = 1"); h < int64(100+len(acked)-unknownClaims) {
		t.Errorf("holds of shop 1 on b: %d, want at least %d", h, 100+len(acked)-unknownClaims)
	}
	// The feed: one continuous cursor sequence across the move.
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
	// The reader followed the feed across the move (events committed after
	// its last empty page — a sweeper's late expiry — are in the full read
	// above).
	if end := lastSeen.Load(); end <= seenAtMove || end > total {
		t.Errorf("reader: at cursor %d when the move began, ended at %d; the feed has %d events", seenAtMove, end, total)
	}
	t.Logf("feed: reader at %d when the move began, ended at %d, the feed has %d events, no gap or repeat", seenAtMove, lastSeen.Load(), total)
	// The source: fenced as gone, purged; b's own shop untouched.
	if st, _ := s.stores["a"].FenceState(ctx, 1); st != pods.FenceGone {
		t.Errorf("shop 1 on a: %q, want gone", st)
	}
	for _, tbl := range []string{"holds", "reserved_quantities", "inventory_ledger", "holdfast_events", "inventory_levels"} {
		if c := count(t, s.a, "SELECT count(*) FROM "+tbl+" WHERE shop_id = 1"); c != 0 {
			t.Errorf("a still holds %d rows of shop 1 in %s", c, tbl)
		}
	}
	if c := count(t, s.b, "SELECT count(*) FROM holds WHERE shop_id = 2 AND status = 'held'"); c != shop2Held {
		t.Errorf("shop 2 on b: %d held, was %d", c, shop2Held)
	}
	fill(t, s.r, 2, 5)
	checkInvariant(t, "a", s.a.eng)
	checkInvariant(t, "b", s.b.eng)
	// A write that reaches a directly (a router that did not see the
	// switch) is refused, retriably.
	if _, err := s.a.eng.Reserve(ctx, cart(1)); !errors.Is(err, holdfast.ErrShopMoved) {
		t.Errorf("reserve of shop 1 on a after the move: %v, want ErrShopMoved", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// waitFor polls cond until it holds, or fails the test after a minute.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMoveAbort: a move that stopped after its copy (its process died)
// leaves the shop served by its source, its copy refused on the target;
// one that stopped after marking the source gone leaves the shop refused
// retriably everywhere. pods abort resolves both from the map: the
// target's copy deleted, the source serving the shop, nothing else
// changed. A move onto a pod that holds rows of the shop is refused and
// changes nothing.
func TestMoveAbort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newMoveSetup(t, pods.Config{MoveWait: 100 * time.Millisecond})
	if _, err := s.m.Assign(ctx, 1, "a"); err != nil {
		t.Fatal(err)
	}
	stock(t, s.r, 1, 100)
	fill(t, s.r, 1, 10)
	before, err := s.stores["a"].Digest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := s.stores["a"], s.stores["b"]

	// Stopped while streaming: the copy done, the shop trading on the
	// source and its changes applied on the target; the mover died (no
	// Stop). Abort drops the subscription, the slots and the publication
	// and deletes the copy.
	if _, err := src.(pods.Streamer).Stream(ctx, 1, dst, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.r.Reserve(ctx, cart(1)); err != nil {
		t.Fatalf("the source serves the shop while it streams: %v", err)
	}
	held := count(t, s.a, "SELECT count(*) FROM holds WHERE shop_id = 1")
	waitCount(t, s.b, held, "SELECT count(*) FROM holds WHERE shop_id = 1")
	if _, err := s.b.eng.Reserve(ctx, cart(1)); !errors.Is(err, holdfast.ErrShopMoved) {
		t.Fatalf("reserve on the target of a streaming shop: %v, want ErrShopMoved", err)
	}
	ab, err := pods.Abort(ctx, s.m, s.stores, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ab.Discarded) != 1 || ab.Discarded[0] != "b" {
		t.Fatalf("abort of a stream: %+v", ab)
	}
	for _, p := range []*podDB{s.a, s.b} {
		if c := count(t, p, `SELECT (SELECT count(*) FROM pg_subscription s JOIN pg_database d ON d.oid = s.subdbid AND d.datname = current_database())
			+ (SELECT count(*) FROM pg_publication)
			+ (SELECT count(*) FROM pg_replication_slots WHERE database = current_database())`); c != 0 {
			t.Fatalf("pod %s keeps %d subscriptions, publications or slots after the abort", p.name, c)
		}
	}
	if c := count(t, s.b, "SELECT count(*) FROM holds WHERE shop_id = 1"); c != 0 {
		t.Fatalf("the target keeps %d holds of shop 1 after the abort of a stream", c)
	}
	before, err = src.Digest(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}

	// Stopped after the copy.
	f, err := src.Fence(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := src.Copy(ctx, f, dst, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Release(ctx); err != nil { // the process "died": its session's lock ends
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
	ab, err = pods.Abort(ctx, s.m, s.stores, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ab.Discarded) != 1 || ab.Discarded[0] != "b" {
		t.Fatalf("abort: %+v", ab)
	}
	if c := count(t, s.b, "SELECT count(*) FROM holds WHERE shop_id = 1"); c != 0 {
		t.Fatalf("the target keeps %d holds of shop 1 after the abort", c)
	}
	if st, _ := dst.FenceState(ctx, 1); st != pods.FenceNone {
		t.Fatalf("target mark after the abort: %q", st)
	}

	// Stopped after marking the source gone, before the switch.
	before, err = src.Digest(ctx, 1)
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
	start := time.Now()
	if _, err := s.r.Reserve(ctx, cart(1)); !errors.Is(err, holdfast.ErrShopMoved) || !errors.Is(err, holdfast.ErrUnavailable) {
		t.Fatalf("reserve of a shop stuck mid-move: %v, want ErrShopMoved (retriable)", err)
	} else if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("the router answered after %v: it did not wait out its MoveWait (100ms)", d)
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
	if pl, _ := s.m.Lookup(ctx, 1); pl.Pod != "a" || pl.Epoch != 1 {
		t.Fatalf("placement after the aborts: %+v", pl)
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
		t.Fatalf("reserve after the refused move: %v", err)
	}
	checkInvariant(t, "a", s.a.eng)
	checkInvariant(t, "b", s.b.eng)
}

func diffDigests(a, b []pods.TableDigest) string {
	if len(a) != len(b) {
		return "tables differ"
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i].Table + ": " + fmtInt(a[i].Rows) + " → " + fmtInt(b[i].Rows) + " rows"
		}
	}
	return ""
}

// TestMoveFence measures the fence of an idle shop's move by its number
// of active holds: 1,000 here; HOLDFAST_MOVE_BIG=1 adds 10,000 with
// 100,000 ledger rows (and moves each shop back). Each move is verified by Move itself (count and hash
// per table).
func TestMoveFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sizes := []int{1_000}
	if os.Getenv("HOLDFAST_MOVE_BIG") != "" {
		sizes = append(sizes, 10_000)
	}
	s := newMoveSetup(t, pods.Config{})
	for i, n := range sizes {
		shop := int64(10 + i)
		if _, err := s.m.Assign(ctx, shop, "a"); err != nil {
			t.Fatal(err)
		}
		stock(t, s.r, shop, 1_000_000)
		fill(t, s.r, shop, n)
		if n >= 10_000 {
			// The target shop: 10,000 active holds and 100,000
			// ledger rows (history of no-op stock changes, written as the
			// engine would: each row fires its event).
			if _, err := s.a.pool.Exec(ctx, `INSERT INTO inventory_ledger (shop_id, inventory_item_id, location_id, delta, available_after, reason)
				SELECT $1, 1, 1, 0, l.available, 'history' FROM inventory_levels l, generate_series(1, 100000)
				WHERE l.shop_id = $1 AND l.inventory_item_id = 1 AND l.location_id = 1`, shop); err != nil {
				t.Fatal(err)
			}
		}
		for _, to := range []string{"b", "a"} {
			rep, err := pods.Move(ctx, pods.MoveParams{ShopID: shop, To: to, Stores: s.stores, Router: s.r, PurgeDelay: time.Millisecond})
			if err != nil {
				t.Fatalf("move of shop %d (%d holds) to %s: %v", shop, n, to, err)
			}
			t.Logf("FENCE holds=%d %s→%s rows=%d fence=%dms (wait %dms copy %dms verify %dms switch %dms) purged=%d",
				n, rep.From, rep.To, rep.Rows, rep.Fence.Milliseconds(), rep.FenceWait.Milliseconds(), rep.Copy.Milliseconds(),
				rep.Verify.Milliseconds(), rep.Switch.Milliseconds(), rep.Purged)
			if _, err := s.r.Reserve(ctx, cart(shop)); err != nil {
				t.Fatalf("reserve after the move to %s: %v", to, err)
			}
			if os.Getenv("HOLDFAST_MOVE_BIG") == "" {
				break
			}
		}
	}
	checkInvariant(t, "a", s.a.eng)
	checkInvariant(t, "b", s.b.eng)
}

// TestMovedStaleRouter: a router that does not follow the map (its cache
// still says pod a) after another process moved the shop and purged pod
// a: a read of a hold that a answers "not found" is asked of the shop's
// new pod, and a write refused by a's tombstone goes there too — the hold
// is found, claimed, and a new one lands on b.
func TestMovedStaleRouter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newMoveSetup(t, pods.Config{FollowInterval: -1, CacheTTL: pods.CacheTTLMax})
	if _, err := s.m.Assign(ctx, 1, "a"); err != nil {
		t.Fatal(err)
	}
	stock(t, s.r, 1, 10)
	p := cart(1)
	if _, err := s.r.Reserve(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Moved by another process: the map only, not this router.
	if _, err := pods.Move(ctx, pods.MoveParams{ShopID: 1, To: "b", Map: s.m, Stores: s.stores, PurgeDelay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if c := count(t, s.a, "SELECT count(*) FROM holds WHERE shop_id = 1"); c != 0 {
		t.Fatalf("a keeps %d holds after the purge", c)
	}
	if pl, _ := s.r.Placement(ctx, 1); pl.Pod != "a" {
		t.Fatalf("the router's cached placement: %+v, want the stale one on a", pl)
	}
	h, err := s.r.Hold(ctx, 1, p.CheckoutID)
	if err != nil || h.Status != holdfast.StatusHeld {
		t.Fatalf("hold through the stale router: %+v, %v", h, err)
	}
	if pl, _ := s.r.Placement(ctx, 1); pl.Pod != "b" || pl.Epoch != 2 {
		t.Fatalf("the router's placement after the not-found: %+v", pl)
	}
	if _, err := s.r.Claim(ctx, 1, p.CheckoutID); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if c := count(t, s.b, "SELECT count(*) FROM holds WHERE shop_id = 1 AND status = 'claimed'"); c != 1 {
		t.Fatalf("claimed holds on b: %d", c)
	}
	// A checkout no pod knows is still "not found" (after one map read).
	if _, err := s.r.Hold(ctx, 1, uuid.New()); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("unknown checkout: %v, want ErrNotFound", err)
	}
}

// TestMoveKilled kills a pod's server in the middle of a move: the
// target's after the copy, then (once that move was aborted and made
// again) the source's after the verify. Each time the move stops with an
// error, the shop is served by its source once that is up, nothing is
// lost, and after `Abort` the same move succeeds. Streamed (the kill
// after the catch-up; Abort drops the stream's leftovers) and copied.
func TestMoveKilled(t *testing.T) {
	for _, method := range []string{pods.MethodStream, pods.MethodCopy} {
		t.Run(method, func(t *testing.T) { testMoveKilled(t, method) })
	}
}

func testMoveKilled(t *testing.T, method string) {
	ctx := context.Background()
	srvX, err := startServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srvX.stop()
	a, x := newPod(t, "a", serverA), newPod(t, "x", srvX)
	m := newMap(t)
	r := newRouter(t, m, pods.Config{ProbeInterval: 50 * time.Millisecond}, a, x)
	stores := map[string]pods.MoveStore{"a": pgmove.New(a.pool), "x": pgmove.New(x.pool)}
	if _, err := m.Assign(ctx, 1, "a"); err != nil {
		t.Fatal(err)
	}
	stock(t, r, 1, 1000)
	var ids []uuid.UUID
	reserve := func() {
		t.Helper()
		p := cart(1)
		if _, err := r.Reserve(ctx, p); err != nil {
			t.Fatalf("reserve: %v", err)
		}
		ids = append(ids, p.CheckoutID)
	}
	for range 20 {
		reserve()
	}
	kill := func(srv *server) func(string) error {
		return func(string) error { srv.kill(t); return nil }
	}
	only := func(step string, f func(string) error) func(string) error {
		return func(s string) error {
			if s == step {
				return f(s)
			}
			return nil
		}
	}

	// 1. The target dies after the copy committed.
	_, err = pods.MoveWithHook(ctx, pods.MoveParams{ShopID: 1, To: "x", Method: method, Stores: stores, Router: r}, only("copied", kill(srvX)))
	if err == nil {
		t.Fatal("a move whose target died succeeded")
	}
	t.Logf("target killed after the copy: %v", err)
	reserve() // the source serves the shop at once
	srvX.restart(t)
	if st, err := stores["x"].FenceState(ctx, 1); err != nil || st != pods.FenceIncoming {
		t.Fatalf("the target after its restart: %q, %v (want the copy, marked incoming)", st, err)
	}
	if _, err := x.eng.Reserve(ctx, cart(1)); !errors.Is(err, holdfast.ErrShopMoved) {
		t.Fatalf("a write of the incoming shop on the target: %v", err)
	}
	if ab, err := pods.Abort(ctx, m, stores, 1); err != nil || len(ab.Discarded) != 1 {
		t.Fatalf("abort: %+v, %v", ab, err)
	}
	rep, err := pods.Move(ctx, pods.MoveParams{ShopID: 1, To: "x", Method: method, Stores: stores, Router: r, PurgeDelay: time.Millisecond})
	if err != nil {
		t.Fatalf("the move again: %v", err)
	}
	if rep.Method != method {
		t.Fatalf("moved by %s, asked %s", rep.Method, method)
	}
	t.Logf("moved after the abort: fence %v, %d rows", rep.Fence, rep.Rows)
	reserve()

	// 2. The source (x now) dies after the verify, before its mark.
	_, err = pods.MoveWithHook(ctx, pods.MoveParams{ShopID: 1, To: "a", Method: method, Stores: stores, Router: r}, only("verified", kill(srvX)))
	if err == nil {
		t.Fatal("a move whose source died succeeded")
	}
	t.Logf("source killed after the verify: %v", err)
	if c := count(t, a, "SELECT count(*) FROM holds WHERE shop_id = 1"); c != 0 {
		t.Fatalf("the target kept %d holds of the undone copy", c)
	}
	srvX.restart(t)
	if st, err := stores["x"].FenceState(ctx, 1); err != nil || st != pods.FenceNone {
		t.Fatalf("the source after its restart: %q, %v (want it serving the shop)", st, err)
	}
	// The router marked x down meanwhile? Its probe brings it back.
	waitFor(t, func() bool {
		p := cart(1)
		_, err := r.Reserve(ctx, p)
		if err == nil {
			ids = append(ids, p.CheckoutID)
		}
		return err == nil
	}, "the source serving the shop after its restart")
	if ab, err := pods.Abort(ctx, m, stores, 1); err != nil || len(ab.Discarded) != 0 || ab.Restored {
		t.Fatalf("abort after the undone move: %+v, %v (want nothing to do)", ab, err)
	}
	if _, err := pods.Move(ctx, pods.MoveParams{ShopID: 1, To: "a", Method: method, Stores: stores, Router: r, PurgeDelay: time.Millisecond}); err != nil {
		t.Fatalf("the move back again: %v", err)
	}
	for _, id := range ids {
		if h, err := a.eng.Hold(ctx, 1, id); err != nil || h.Status != holdfast.StatusHeld {
			t.Fatalf("hold %s after the moves: %+v, %v", id, h, err)
		}
	}
	if c := count(t, a, "SELECT count(*) FROM holds WHERE shop_id = 1"); c != int64(len(ids)) {
		t.Fatalf("holds of shop 1 on a: %d, reserved %d", c, len(ids))
	}
	checkInvariant(t, "a", a.eng)
	checkInvariant(t, "x", x.eng)
}

// waitCount polls q on p until it answers want (a stream applies changes
// as they commit, not at once), failing after 30 s.
func waitCount(t *testing.T, p *podDB, want int64, q string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := count(t, p, q, args...)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s: %s answers %d, want %d", p.name, q, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
