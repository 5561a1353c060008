package faulttest

import (
	"context"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
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

// Env is a holdfast client on a fresh database with fault injection around
// it, and a record of what the client was told.
type Env struct {
	T       testing.TB
	DB      *pgtest.Database
	Pool    *pgxpool.Pool    // the engine's pool: traced, maybe proxied or pooled
	Admin   *pgxpool.Pool    // direct, untraced: fault injection and checks
	Client  *postgres.Client // the engine under test
	Checker *postgres.Client // on Admin: resolves and verifies after the faults
	Clock   *Clock
	Hook    *Hook
	Proxy   *Proxy
	Tally   *Tally
	Hist    *history.History // nil unless Options.History
	Keys    []KeyInfo
	Cfg     holdfast.Config

	mu        sync.Mutex
	book      map[uuid.UUID]*Entry
	coNum     map[uuid.UUID]int
	bouncerOn bool
	checks    int
	sweeps    map[*sweepRec]bool // concurrent sweeps in flight
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
		e.Hist = history.NewHistory()
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
	if e.Client, err = postgres.New(e.Pool, cfg); err != nil {
		t.Fatal(err)
	}
	e.Cfg = e.Client.Config()
	ccfg := cfg
	ccfg.LowWaterPercent = 100 // refill every buffer that is not full
	ccfg.RetryMax = 0
	ccfg.LockTimeout, ccfg.StatementTimeout = 0, 0
	if e.Checker, err = postgres.New(e.Admin, ccfg); err != nil {
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
		e.Hist.Add(0, history.Input{Op: history.OpSet, Key: i, Delta: n}, call, history.Output{Result: history.ResOK})
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
