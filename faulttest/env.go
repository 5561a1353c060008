package faulttest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pgtest"
)

// Application names tell the fault injector which backends are fair game.
const (
	appEngine = "holdfast-faulttest"
	appAdmin  = "holdfast-faulttest-admin"
)

// Options configures an Env.
type Options struct {
	// Strategy, PoolCap and Slots are the engine's defaults (keys may
	// override the strategy). Strategy defaults to the engine's default,
	// StrategyBatch; PoolCap to 5 and Slots to 4 so that buffers run dry
	// and refill often.
	Strategy holdfast.Strategy
	PoolCap  int
	Slots    int
	// MaxConns sizes the engine's pool; 0 means 8.
	MaxConns int
	// RetryMax is the engine's Config.RetryMax (0: its default; -1: none).
	RetryMax int
	// Proxy routes the engine's connections through a Proxy (for commit
	// cuts and partitions).
	Proxy bool
	// Bouncer routes the engine's connections through this PgBouncer.
	Bouncer *PgBouncer
	// History records operations for a linearizability check.
	History bool
	// Config adjusts the engine's configuration.
	Config func(*holdfast.Config)
	// ExecMode sets pgx's default_query_exec_mode on the engine's
	// connections ("" leaves the URL's).
	ExecMode string
	// Database is the database to use; nil means a fresh pgtest.DB.
	Database *pgtest.Database
}

// KeyInfo is a key under test.
type KeyInfo struct {
	holdfast.Key
	Strategy holdfast.Strategy

	// changing counts SetStrategy calls in flight on the key, gen those
	// started; uncertain: one ended with an unknown outcome.
	changing, gen int
	uncertain     bool
}

// strictness is a snapshot of a cart's keys' strategies, to decide whether
// "insufficient stock" and "hold expired" answers are checked strictly
// (Input.Strict).
type strictness struct {
	gens    []int
	lenient bool
}

// Env is a holdfast client on a fresh database with fault injection around
// it, and a record of what the client was told.
type Env struct {
	T       testing.TB
	DB      *pgtest.Database
	Pool    *pgxpool.Pool    // the engine's pool: traced, maybe proxied or pooled
	Admin   *pgxpool.Pool    // direct, untraced: fault injection and checks
	Client  *holdfast.Client // the engine under test
	Checker *holdfast.Client // on Admin: resolves and verifies after the faults
	Clock   *Clock
	Hook    *Hook
	Proxy   *Proxy
	Tally   *Tally
	Hist    *History // nil unless Options.History
	Keys    []KeyInfo
	Cfg     holdfast.Config

	mu        sync.Mutex
	book      map[uuid.UUID]*Entry
	coNum     map[uuid.UUID]int
	bouncerOn bool
	checks    int
	sweeps    map[*sweepRec]bool // concurrent sweeps in flight
}

// sweepRec collects the checkouts whose claims, releases and extends
// overlapped a concurrent sweep: it may have skipped their rows.
type sweepRec struct{ cos map[int]bool }

// Entry is what the client was told about one checkout.
type Entry struct {
	Shop  int64
	Lines []holdfast.Line
	// Acked: a Reserve succeeded. Status is the last acknowledged status.
	Acked  bool
	Status holdfast.Status
	// Exp is a lower bound of the hold's expiry as acknowledged.
	Exp time.Time
	// Doubt: an operation on the checkout ended with an unknown outcome
	// after it was acknowledged (a claim or release may have happened).
	Doubt bool

	inflight, starts int       // claims and releases in flight, and started
	extending        int       // extends in flight
	extOverlap       bool      // an extend overlapped another
	endedAt          time.Time // when a claim or release was acknowledged
}

// New returns an Env for t on a fresh database. Its checks run and its
// tally is logged when t ends.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	if o.PoolCap == 0 {
		o.PoolCap = 5
	}
	if o.Slots == 0 {
		o.Slots = 4
	}
	if o.MaxConns == 0 {
		o.MaxConns = 8
	}
	if o.Strategy == "" {
		o.Strategy = holdfast.StrategyBatch
	}
	db := o.Database
	if db == nil {
		db = pgtest.DB(t, 4)
	}
	e := &Env{T: t, DB: db, Clock: NewClock(), Hook: &Hook{}, Tally: &Tally{},
		book: map[uuid.UUID]*Entry{}, coNum: map[uuid.UUID]int{}, sweeps: map[*sweepRec]bool{}}
	if o.History {
		e.Hist = NewHistory()
	}
	var err error
	e.Admin, err = newPool(db.URL, appAdmin, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Admin.Close)

	engineURL := db.URL
	if o.Bouncer != nil {
		e.bouncerOn = true
		engineURL = o.Bouncer.URL(db.Name)
	}
	if o.Proxy {
		u, err := url.Parse(engineURL)
		if err != nil {
			t.Fatal(err)
		}
		e.Proxy = StartProxy(t, u.Host)
		u.Host = e.Proxy.Addr()
		engineURL = u.String()
	}
	if o.ExecMode != "" {
		u, err := url.Parse(engineURL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("default_query_exec_mode", o.ExecMode)
		u.RawQuery = q.Encode()
		engineURL = u.String()
	}
	e.Pool, err = newPool(engineURL, appEngine, o.MaxConns, e.Hook)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Pool.Close)

	cfg := holdfast.Config{Strategy: o.Strategy, PoolCap: o.PoolCap, Slots: o.Slots, RetryMax: o.RetryMax, Now: e.Clock.Now}
	if o.Config != nil {
		o.Config(&cfg)
	}
	e.Cfg = cfg
	if e.Client, err = holdfast.New(e.Pool, cfg); err != nil {
		t.Fatal(err)
	}
	e.Cfg = e.Client.Config()
	ccfg := cfg
	ccfg.LowWaterPercent = 100 // refill every buffer that is not full
	ccfg.RetryMax = 0
	ccfg.LockTimeout, ccfg.StatementTimeout = 0, 0
	if e.Checker, err = holdfast.New(e.Admin, ccfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		Total.Merge(e.Tally, e.Checks())
		t.Logf("faults injected in %s:\n%s", t.Name(), e.Tally)
	})
	return e
}

func newPool(u, app string, maxConns int, tracer *Hook) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(maxConns)
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return pgxpool.NewWithConfig(ctx, cfg)
}

// Seed returns the run's seed: HOLDFAST_SEED when set, else a fresh one. It
// logs it so that a failing run can be replayed.
func Seed(t testing.TB) uint64 {
	t.Helper()
	if s := os.Getenv("HOLDFAST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HOLDFAST_SEED: %v", err)
		}
		return n
	}
	n := rand.Uint64() >> 1
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with HOLDFAST_SEED=%d go test -run '^%s$' ./faulttest/...", n, t.Name())
		}
	})
	return n
}

// Long reports whether the long forms run (HOLDFAST_LONG=1).
func Long() bool { return os.Getenv("HOLDFAST_LONG") != "" }

// AddKey stocks a key with n units under strategy s and returns its index.
func (e *Env) AddKey(k holdfast.Key, s holdfast.Strategy, n int) int {
	e.T.Helper()
	ctx := context.Background()
	if _, err := e.Checker.SetStrategy(ctx, k, s, 0); err != nil {
		e.T.Fatalf("set strategy: %v", err)
	}
	call := int64(0)
	if e.Hist != nil {
		call = e.Hist.Now()
	}
	if _, err := e.Checker.SetAvailable(ctx, k, n, "faulttest stock", ""); err != nil {
		e.T.Fatalf("stock: %v", err)
	}
	e.mu.Lock()
	e.Keys = append(e.Keys, KeyInfo{Key: k, Strategy: s})
	i := len(e.Keys) - 1
	e.mu.Unlock()
	if e.Hist != nil {
		e.Hist.Add(0, Input{Op: OpSet, Key: i, Delta: n}, call, Output{Result: ResOK})
	}
	return i
}

func (e *Env) keyIndex(k holdfast.Key) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, ki := range e.Keys {
		if ki.Key == k {
			return i
		}
	}
	return -1
}

// Checks is the number of assertions run so far.
func (e *Env) Checks() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.checks
}

func (e *Env) checked(n int) {
	e.mu.Lock()
	e.checks += n
	e.mu.Unlock()
}

// Violation reports a broken guarantee.
func (e *Env) Violation(format string, args ...any) {
	e.T.Helper()
	e.T.Errorf("VIOLATION: "+format, args...)
}

func micros(t time.Time) int64 { return t.UnixMicro() }

// entry returns the book entry of a checkout, creating it.
func (e *Env) entry(shop int64, co uuid.UUID, lines []holdfast.Line) (*Entry, int) {
	en, ok := e.book[co]
	if !ok {
		en = &Entry{Shop: shop, Lines: lines}
		e.book[co] = en
		e.coNum[co] = len(e.coNum) + 1
	}
	if en.Lines == nil {
		en.Lines = lines
	}
	return en, e.coNum[co]
}

// Register makes a checkout and its lines known before any operation on it
// is sent, so that operations racing its reservation are attributed to its
// key in the history.
func (e *Env) Register(shop int64, co uuid.UUID, lines []holdfast.Line) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(shop, co, lines)
}

// cart fills in's cart from lines (keys of the Env); ok is false when the
// history cannot model it (a key not in the Env, too many lines).
func (e *Env) cart(in *Input, shop int64, lines []holdfast.Line) bool {
	if len(lines) == 0 || len(lines) > CartLinesMax {
		return false
	}
	for i, l := range lines {
		k := e.keyIndex(holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if k < 0 {
			return false
		}
		in.Cart[i] = CartLine{Key: k, Qty: l.Quantity}
	}
	in.NCart = len(lines)
	in.Key, in.Qty = in.Cart[0].Key, in.Cart[0].Qty
	return true
}

// strict snapshots the strategies of a cart's keys at a call's start.
func (e *Env) strict(shop int64, lines []holdfast.Line) strictness {
	e.mu.Lock()
	defer e.mu.Unlock()
	var st strictness
	for _, l := range lines {
		k := holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
		for _, ki := range e.Keys {
			if ki.Key != k {
				continue
			}
			st.gens = append(st.gens, ki.gen)
			st.lenient = st.lenient || ki.Strategy == holdfast.StrategyPool || ki.changing > 0 || ki.uncertain
		}
	}
	return st
}

// lenient reports whether a call that started at st must be judged
// leniently: a pool key, or a strategy change overlapped the call.
func (e *Env) lenient(st strictness, shop int64, lines []holdfast.Line) bool {
	now := e.strict(shop, lines)
	return st.lenient || now.lenient || !slices.Equal(st.gens, now.gens)
}

// recordCart records an operation on a checkout whose cart has lines.
func (e *Env) recordCart(client int, in Input, shop int64, lines []holdfast.Line, call int64, out Output) {
	if e.Hist == nil || !e.cart(&in, shop, lines) {
		return
	}
	e.Hist.Add(client, in, call, out)
}

func (e *Env) record(client, key int, in Input, call int64, out Output) {
	if e.Hist == nil || key < 0 {
		return
	}
	in.Key = key
	e.Hist.Add(client, in, call, out)
}

func (e *Env) call() int64 {
	if e.Hist == nil {
		return 0
	}
	return e.Hist.Now()
}

func (e *Env) untyped(op string, err error) {
	if Classify(err) == ResUntyped {
		e.Violation("%s returned an untyped error: %v", op, err)
	}
}

// Reserve reserves through the engine and records the outcome.
func (e *Env) Reserve(ctx context.Context, client int, shop int64, co uuid.UUID, lines []holdfast.Line, ttl time.Duration) (*holdfast.Hold, error) {
	now := e.Clock.Now()
	started := time.Now()
	st := e.strict(shop, lines)
	call := e.call()
	h, err := e.Client.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: co, Lines: lines, TTL: ttl})
	res := Classify(err)
	e.untyped("reserve", err)
	e.mu.Lock()
	en, num := e.entry(shop, co, lines)
	out := Output{Result: res}
	switch res {
	case ResOK:
		out.Exp = micros(h.ExpiresAt)
		out.Replayed = h.Replayed
		if !en.Acked {
			// Later replays may have read an expiry that a concurrent
			// extend has since shortened: only the first answer and
			// extends set it.
			en.Exp = h.ExpiresAt
		}
		if !en.Acked && en.endedAt.IsZero() {
			// A claim or release of the checkout may have been answered
			// before this reservation's own answer was recorded (the
			// client goroutine was slow to come back): keep that outcome,
			// or the book would think the hold still held.
			en.Status = holdfast.StatusHeld
		}
		en.Acked = true
		if en.Status != holdfast.StatusHeld && !en.endedAt.IsZero() && en.endedAt.Before(started) && !en.Doubt {
			e.mu.Unlock()
			e.Violation("reserve of checkout %v succeeded after it was acknowledged %s", co, en.Status)
			e.mu.Lock()
		}
	case ResUnknown, ResUntyped:
		if en.Acked {
			en.Doubt = true
		}
	case ResClaimed, ResReleased, ResExpired:
		out.Late = true
	}
	e.mu.Unlock()
	e.recordCart(client, Input{Op: OpReserve, CO: num, Now: micros(now), TTL: ttl.Microseconds(), Life: e.Cfg.HoldLifetimeMax.Microseconds(),
		Strict: !e.lenient(st, shop, lines)}, shop, lines, call, out)
	return h, err
}

// Acknowledge records what a client outside the Env's wrappers (the HTTP
// API) was told: a reservation (status held, with its expiry), a claim or a
// release succeeded. Doubt records an answer whose outcome is unknown.
func (e *Env) Acknowledge(shop int64, co uuid.UUID, status holdfast.Status, exp time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, _ := e.entry(shop, co, nil)
	if status == holdfast.StatusHeld {
		if !en.Acked {
			en.Exp = exp
			if en.endedAt.IsZero() {
				en.Status = status
			}
		}
		en.Acked = true
		return
	}
	en.Status = status
	if en.endedAt.IsZero() {
		en.endedAt = time.Now()
	}
}

// Doubt marks a checkout whose last operation's outcome is unknown.
func (e *Env) Doubt(shop int64, co uuid.UUID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, _ := e.entry(shop, co, nil)
	if en.Acked {
		en.Doubt = true
	}
}

// end records a claim or release, and checks the answer against what the
// client was told before: a claim or release that finds an acknowledged,
// unexpired hold gone (when no other operation on the checkout overlapped
// it) is a lost hold.
func (e *Env) end(ctx context.Context, client int, op Op, shop int64, co uuid.UUID) (*holdfast.Hold, error) {
	now := e.Clock.Now()
	e.mu.Lock()
	en, num := e.entry(shop, co, nil)
	snap := *en
	overlapped := en.inflight > 0
	en.inflight++
	en.starts++
	myStart := en.starts
	lines := en.Lines
	for sw := range e.sweeps {
		sw.cos[num] = true
	}
	e.mu.Unlock()

	st := e.strict(shop, lines)
	call := e.call()
	var h *holdfast.Hold
	var err error
	if op == OpClaim {
		h, err = e.Client.Claim(ctx, shop, co)
	} else {
		h, err = e.Client.Release(ctx, shop, co)
	}
	res := Classify(err)
	e.untyped(string(op), err)

	e.mu.Lock()
	en.inflight--
	overlapped = overlapped || en.starts != myStart
	certain := snap.Acked && snap.Status == holdfast.StatusHeld && !snap.Doubt && !en.Doubt && !overlapped
	out := Output{Result: res}
	var lost string
	switch res {
	case ResOK:
		out.Status = h.Status
		if certain && op == OpClaim && h.Status != holdfast.StatusClaimed {
			lost = fmt.Sprintf("claim of acknowledged hold %v answered %s", co, h.Status)
		}
		en.Status = h.Status
		if en.endedAt.IsZero() {
			en.endedAt = time.Now()
		}
	case ResUnknown, ResUntyped:
		en.Doubt = true
	case ResExpired, ResNotFound, ResReleased, ResClaimed:
		if certain && en.Exp.After(e.Clock.Now()) {
			lost = fmt.Sprintf("%s of acknowledged, unexpired hold %v (expires %v, clock %v): %v", op, co, en.Exp, now, err)
		}
	}
	e.mu.Unlock()
	if lost != "" {
		e.Violation("%s", lost)
	}
	e.checked(1)
	e.recordCart(client, Input{Op: op, CO: num, Now: micros(now), Strict: !e.lenient(st, shop, lines)}, shop, lines, call, out)
	return h, err
}

// Claim claims through the engine and records the outcome.
func (e *Env) Claim(ctx context.Context, client int, shop int64, co uuid.UUID) (*holdfast.Hold, error) {
	return e.end(ctx, client, OpClaim, shop, co)
}

// Release releases through the engine and records the outcome.
func (e *Env) Release(ctx context.Context, client int, shop int64, co uuid.UUID) (*holdfast.Hold, error) {
	return e.end(ctx, client, OpRelease, shop, co)
}

// Extend extends through the engine and records the outcome.
func (e *Env) Extend(ctx context.Context, client int, shop int64, co uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	now := e.Clock.Now()
	e.mu.Lock()
	en, num := e.entry(shop, co, nil)
	if en.extending > 0 {
		en.extOverlap = true
	}
	en.extending++
	lines := en.Lines
	for sw := range e.sweeps {
		sw.cos[num] = true
	}
	e.mu.Unlock()

	call := e.call()
	h, err := e.Client.Extend(ctx, shop, co, ttl)
	res := Classify(err)
	e.untyped("extend", err)
	e.mu.Lock()
	en.extending--
	out := Output{Result: res}
	switch res {
	case ResOK:
		out.Exp = micros(h.ExpiresAt)
		switch {
		case en.extOverlap:
			// Concurrent extends: the one applied last may not be the
			// one answered last; keep the lower bound.
			if h.ExpiresAt.Before(en.Exp) {
				en.Exp = h.ExpiresAt
			}
		case !en.Doubt:
			en.Exp = h.ExpiresAt
		}
	case ResClaimed, ResReleased, ResExpired:
		out.Late = true
	case ResUnknown, ResUntyped:
		// It may have moved the expiry either way.
		if c := now.Add(ttl); c.Before(en.Exp) {
			en.Exp = c
		}
	}
	if en.extending == 0 {
		en.extOverlap = false
	}
	e.mu.Unlock()
	e.recordCart(client, Input{Op: OpExtend, CO: num, Now: micros(now), TTL: ttl.Microseconds()}, shop, lines, call, out)
	return h, err
}

// Adjust adjusts a key's stock through the engine and records the outcome.
func (e *Env) Adjust(ctx context.Context, client int, k holdfast.Key, delta int) (*holdfast.Level, error) {
	call := e.call()
	l, err := e.Client.Adjust(ctx, k, delta, "faulttest adjust", "")
	res := Classify(err)
	e.untyped("adjust", err)
	out := Output{Result: res}
	if res == ResOK {
		out.Available, out.Held = l.Available, l.Held
	}
	e.record(client, e.keyIndex(k), Input{Op: OpAdjust, Delta: delta}, call, out)
	return l, err
}

// Level reads a key's level through the engine and records it.
func (e *Env) Level(ctx context.Context, client int, k holdfast.Key) (*holdfast.Level, error) {
	call := e.call()
	l, err := e.Client.Level(ctx, k)
	res := Classify(err)
	e.untyped("level", err)
	if res == ResOK {
		e.record(client, e.keyIndex(k), Input{Op: OpLevel}, call, Output{Result: res, Available: l.Available, Held: l.Held})
	}
	return l, err
}

// SweepAll expires every hold past the clock, with nothing else running,
// and records it as one sweep in the history.
func (e *Env) SweepAll(ctx context.Context, client int) {
	e.T.Helper()
	call := e.call()
	now := e.Clock.Now()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := e.Checker.SweepOnce(ctx)
		if err != nil {
			e.T.Fatalf("sweep: %v", err)
		}
		if n > 0 {
			continue
		}
		// A backend that was terminated may still be rolling back and
		// holding a hold's row lock (the sweeper skips locked rows):
		// sweep until none is left past its expiry.
		var left int
		if err := e.Admin.QueryRow(ctx, "SELECT count(*) FROM holds WHERE status = 'held' AND expires_at < $1", now).Scan(&left); err != nil {
			e.T.Fatalf("count expired: %v", err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("%d expired holds left unswept", left)
		}
	}
	if e.Hist != nil {
		e.Hist.Add(client, Input{Op: OpSweep, Key: -1, Now: micros(now)}, call, Output{Result: ResOK})
	}
}

// Sweep runs one SweepOnce while other operations may run, and records it
// as a concurrent sweep (Input.Partial): it expires every hold past the
// clock except, possibly, those whose rows a claim, release or extend that
// overlapped it held locked (the sweep skips locked rows).
func (e *Env) Sweep(ctx context.Context, client int) (int, error) {
	now := e.Clock.Now()
	rec := &sweepRec{cos: map[int]bool{}}
	e.mu.Lock()
	for co, en := range e.book {
		if en.inflight > 0 || en.extending > 0 {
			rec.cos[e.coNum[co]] = true
		}
	}
	e.sweeps[rec] = true
	e.mu.Unlock()
	call := e.call()
	n, err := e.Client.SweepOnce(ctx)
	e.untyped("sweep", err)
	e.mu.Lock()
	delete(e.sweeps, rec)
	e.mu.Unlock()
	if e.Hist != nil {
		in := Input{Op: OpSweep, Key: -1, Now: micros(now), Partial: true}
		if len(rec.cos) > SkipMax {
			in.SkipAll = true
		} else {
			for _, co := range slices.Sorted(maps.Keys(rec.cos)) {
				in.Skip[in.NSkip] = co
				in.NSkip++
			}
		}
		e.Hist.Add(client, in, call, Output{Result: Classify(err)})
	}
	return n, err
}

// SetStrategy switches a key's strategy and pool cap through the engine.
// While it runs, and forever after it ends with an unknown outcome, the
// key's "insufficient stock" and "hold expired" answers are judged
// leniently (units move between buffers).
func (e *Env) SetStrategy(ctx context.Context, k holdfast.Key, s holdfast.Strategy, poolCap int) error {
	i := e.keyIndex(k)
	e.mu.Lock()
	if i >= 0 {
		e.Keys[i].changing++
		e.Keys[i].gen++
	}
	e.mu.Unlock()
	_, err := e.Client.SetStrategy(ctx, k, s, poolCap)
	e.untyped("set strategy", err)
	e.mu.Lock()
	if i >= 0 {
		e.Keys[i].changing--
		e.Keys[i].gen++
		switch Classify(err) {
		case ResOK:
			e.Keys[i].Strategy = s
		case ResUnknown, ResUntyped:
			e.Keys[i].uncertain = true
		}
	}
	e.mu.Unlock()
	return err
}

// QuiesceBound bounds how long Quiesce waits for the engine to go idle.
const QuiesceBound = time.Minute

// Quiesce waits until nothing the engine started is still running — no
// connection of its pool in use, no backend of its connections in the test
// database busy or in a transaction — and marks the history there (see
// History.Mark), which bounds the windows of operations whose outcome is
// unknown. Call it with no operation in flight. It polls (an event to wait
// for, not a time window) up to QuiesceBound; past that the history gets no
// mark and those windows run to the history's end.
func (e *Env) Quiesce(ctx context.Context) {
	deadline := time.Now().Add(QuiesceBound)
	for {
		busy := int(e.Pool.Stat().AcquiredConns())
		if busy == 0 {
			var n int
			err := e.Admin.QueryRow(ctx, `
SELECT count(*) FROM pg_stat_activity
WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'
  AND coalesce(application_name, '') <> $2 AND state IS DISTINCT FROM 'idle'`, e.DB.Name, appAdmin).Scan(&n)
			if err != nil {
				// A pooled connection a server restart closed: ask again.
				n = -1
			}
			busy = n
		}
		if busy == 0 {
			if e.Hist != nil {
				e.Hist.Mark()
			}
			return
		}
		if time.Now().After(deadline) {
			e.T.Logf("quiesce: the engine still had %d busy connections or backends (-1: could not ask) after %v; no quiescence mark", busy, QuiesceBound)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// KillRandom terminates one random backend of the engine's connections in
// the test database; it reports whether there was one.
func (e *Env) KillRandom(ctx context.Context) bool {
	var ok bool
	err := e.Admin.QueryRow(ctx, `
SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM (
  SELECT pid FROM pg_stat_activity
  WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'
    AND coalesce(application_name, '') <> $2
  ORDER BY random() LIMIT 1) v`, e.DB.Name, appAdmin).Scan(&ok)
	if err == nil && ok {
		e.Tally.Inject("backend terminated at random", 1)
	}
	return ok
}

// StartKiller terminates a random engine backend at random intervals
// (uniform in [0, 2*mean]) until the returned stop is called.
func (e *Env) StartKiller(mean time.Duration, seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rng := rand.New(rand.NewPCG(seed, 7))
	go func() {
		defer close(done)
		for {
			t := time.NewTimer(time.Duration(rng.Int64N(int64(2*mean) + 1)))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			e.KillRandom(ctx)
		}
	}()
	return func() { cancel(); <-done }
}

// KillBeforeCommit terminates the backend of a random fraction (rate) of
// transactions after their last statement, right before COMMIT is sent,
// and waits for the backend to exit. Through PgBouncer the client's
// backend is not known by pid: an idle-in-transaction backend of the
// database is terminated instead.
func (e *Env) KillBeforeCommit(rate float64, seed uint64, bouncer bool) {
	if rate <= 0 {
		e.Hook.SetBeforeCommit(nil)
		return
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 11))
	e.Hook.SetBeforeCommit(func(ctx context.Context, conn *pgx.Conn) {
		mu.Lock()
		hit := rng.Float64() < rate
		mu.Unlock()
		if !hit {
			return
		}
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		var ok bool
		var err error
		if bouncer {
			err = e.Admin.QueryRow(kctx, `
SELECT coalesce(bool_or(pg_terminate_backend(pid, 5000)), false) FROM (
  SELECT pid FROM pg_stat_activity
  WHERE datname = $1 AND pid <> pg_backend_pid() AND state = 'idle in transaction'
    AND coalesce(application_name, '') <> $2
  ORDER BY random() LIMIT 1) v`, e.DB.Name, appAdmin).Scan(&ok)
		} else {
			err = e.Admin.QueryRow(kctx, "SELECT pg_terminate_backend($1, 5000)", conn.PgConn().PID()).Scan(&ok)
		}
		if err == nil && ok {
			e.Tally.Inject("backend terminated before COMMIT", 1)
		}
	})
}

// Verify checks, after the faults have stopped: the invariant over the
// whole database; that every acknowledged hold is where the client was told
// it is and every unexpired held checkout is claimable (it claims them
// all); and that no unit leaked: once every hold has expired and been swept
// and the buffers replenished, each key holds nothing and its buffer is
// full (pooled = min(cap, available) for pool keys, = available otherwise).
// It returns the number of assertions run.
func (e *Env) Verify(ctx context.Context) int {
	e.T.Helper()
	n := 0
	e.checkInvariant(ctx, "after the scenario")
	n++
	now := e.Clock.Now()
	e.mu.Lock()
	book := make(map[uuid.UUID]Entry, len(e.book))
	for co, en := range e.book {
		book[co] = *en
	}
	e.mu.Unlock()
	claimed := 0
	const verifier = 1 << 20 // the history's client id of Verify's calls
	for co, en := range book {
		e.mu.Lock()
		num := e.coNum[co]
		e.mu.Unlock()
		call := e.call()
		readAt := e.Clock.Now()
		h, err := e.Checker.Hold(ctx, en.Shop, co)
		n++
		if out := (Output{Result: Classify(err)}); out.Result == ResOK || out.Result == ResNotFound {
			if h != nil {
				out.Status, out.Exp = h.Status, micros(h.ExpiresAt)
			}
			e.recordCart(verifier, Input{Op: OpHold, CO: num, Now: micros(readAt)}, en.Shop, en.Lines, call, out)
		}
		if errors.Is(err, holdfast.ErrNotFound) {
			if en.Acked {
				e.Violation("acknowledged checkout %v has no hold or outcome", co)
			}
			continue
		}
		if err != nil {
			e.T.Fatalf("read hold %v: %v", co, err)
		}
		if en.Acked && !en.Doubt && en.Status != holdfast.StatusHeld && h.Status != en.Status {
			e.Violation("checkout %v was acknowledged %s, database says %s", co, en.Status, h.Status)
		}
		if en.Acked && !en.Doubt && en.Status == holdfast.StatusHeld && en.Exp.After(now) && h.Status != holdfast.StatusHeld {
			e.Violation("acknowledged hold %v (expires %v, clock %v) is %s", co, en.Exp, now, h.Status)
		}
		if h.Status != holdfast.StatusHeld {
			continue
		}
		st := e.strict(en.Shop, h.Lines)
		call = e.call()
		ch, err := e.Checker.Claim(ctx, en.Shop, co)
		n++
		out := Output{Result: Classify(err)}
		if ch != nil {
			out.Status = ch.Status
		}
		e.recordCart(verifier, Input{Op: OpClaim, CO: num, Now: micros(now), Strict: !e.lenient(st, en.Shop, h.Lines)}, en.Shop, en.Lines, call, out)
		switch {
		case err == nil:
			claimed++
		case errors.Is(err, holdfast.ErrOverCommitted):
			if !e.overCommitted(ctx, en.Shop, h.Lines) {
				e.Violation("claim of held %v: over-committed, but no key of it is: %v", co, err)
			}
		default:
			e.Violation("claim of held checkout %v (expires %v, clock %v) failed: %v", co, h.ExpiresAt, now, err)
		}
	}
	e.checkInvariant(ctx, "after claiming every held checkout")
	n++
	n += e.checkClaimLedger(ctx)

	// Expire everything that is left, sweep, replenish: nothing may be held
	// and every buffer must be full.
	e.Clock.Advance(e.Checker.Config().HoldLifetimeMax + time.Hour)
	for {
		k, err := e.Checker.SweepOnce(ctx)
		if err != nil {
			e.T.Fatalf("sweep: %v", err)
		}
		if k == 0 {
			break
		}
	}
	if _, err := e.Checker.Replenish(ctx); err != nil {
		e.T.Fatalf("replenish: %v", err)
	}
	for _, ki := range e.Keys {
		l, err := e.Checker.Level(ctx, ki.Key)
		if err != nil {
			e.T.Fatalf("level: %v", err)
		}
		n++
		want := l.Available
		if l.Strategy == holdfast.StrategyPool {
			want = min(l.PoolCap, l.Available)
		}
		if l.Held != 0 || l.Pooled != want {
			e.Violation("unit leak on key %+v (%s): after sweep and replenish held %d pooled %d available %d cap %d; want held 0 pooled %d",
				ki.Key, l.Strategy, l.Held, l.Pooled, l.Available, l.PoolCap, want)
		}
	}
	e.checkInvariant(ctx, "after sweep and replenish")
	n++
	e.checked(n)
	if e.Hist != nil {
		started := time.Now()
		res, err := e.Hist.CheckNamed(e.T.Name(), CheckTimeoutDefault)
		e.checked(1)
		n++
		if err != nil {
			e.Violation("%v", err)
		}
		e.T.Logf("history: %d operations, linearizability %s (checked in %v)", e.Hist.Len(), res, time.Since(started).Round(time.Millisecond))
	}
	return n
}

// checkClaimLedger checks that every claimed checkout deducted each of its
// lines exactly once in the audit trail, and that no other checkout
// deducted anything: never a double claim, never a claim without its hold.
func (e *Env) checkClaimLedger(ctx context.Context) int {
	e.T.Helper()
	rows, err := e.Admin.Query(ctx, `
WITH h AS (
    SELECT checkout_id::text AS ref, status, jsonb_array_length(lines) AS nlines,
           (SELECT coalesce(sum((l->>'quantity')::int), 0) FROM jsonb_array_elements(lines) l) AS qty
    FROM holds
), g AS (
    SELECT reference AS ref, count(*) AS n, coalesce(sum(-delta), 0) AS qty
    FROM inventory_ledger WHERE reason LIKE 'claim%' GROUP BY reference
)
SELECT h.ref, h.status, coalesce(g.n, 0)::int, coalesce(g.qty, 0)::int, h.nlines, h.qty::int
FROM h LEFT JOIN g USING (ref)
WHERE (h.status = 'claimed' AND (coalesce(g.n, 0) <> h.nlines OR coalesce(g.qty, 0) <> h.qty))
   OR (h.status <> 'claimed' AND coalesce(g.n, 0) > 0)`)
	if err != nil {
		e.T.Fatalf("claim ledger check: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ref, status string
		var n, qty, nlines, want int
		if err := rows.Scan(&ref, &status, &n, &qty, &nlines, &want); err != nil {
			e.T.Fatal(err)
		}
		e.Violation("checkout %s (%s): %d claim entries deducting %d in the ledger; its hold has %d lines of %d units",
			ref, status, n, qty, nlines, want)
	}
	if err := rows.Err(); err != nil {
		e.T.Fatal(err)
	}
	return 1
}

func (e *Env) overCommitted(ctx context.Context, shop int64, lines []holdfast.Line) bool {
	for _, l := range lines {
		lv, err := e.Checker.Level(ctx, holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if err == nil && lv.Available < l.Quantity {
			return true
		}
	}
	return false
}

func (e *Env) checkInvariant(ctx context.Context, when string) {
	e.T.Helper()
	rep, err := e.Checker.CheckInvariant(ctx)
	if err != nil {
		e.T.Fatalf("invariant check %s: %v", when, err)
	}
	if !rep.OK() {
		e.Violation("invariant broken %s: %s", when, rep)
	}
}
