package shadow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/maint"
	"github.com/holdfast/holdfast/legacy"
)

// Bounds and defaults.
const (
	// PollIntervalDefault paces the mode poll: a change made on one replica
	// is applied by every other within about this long (one small query
	// per poll; the modes reload only when their revision moved).
	PollIntervalDefault = 250 * time.Millisecond
	// PollIntervalMax keeps the "every replica within a second" promise.
	PollIntervalMax = time.Second
	// FlushIntervalDefault paces the comparison counters' flush.
	FlushIntervalDefault = 2 * time.Second
	// SamplesPerShopMax bounds the disagreement samples kept per shop.
	SamplesPerShopMax = 100
	// SampleBufferMax bounds the samples buffered between flushes; more are
	// counted but dropped.
	SampleBufferMax = 1000
)

// Config configures an Engine. The zero value of every field means its
// default.
type Config struct {
	// PollInterval defaults to PollIntervalDefault; at most PollIntervalMax.
	PollInterval time.Duration
	// FlushInterval defaults to FlushIntervalDefault.
	FlushInterval time.Duration
	// HoldLifetimeMax is the longest a legacy hold can live (TTL plus
	// extensions): a shop warms this long after entering shadow. Defaults
	// to holdfast.HoldLifetimeMaxDefault.
	HoldLifetimeMax time.Duration
	// HoldTTLDefault fills ReserveParams.TTL when zero, so both sides get
	// the same TTL. Defaults to holdfast.HoldTTLDefault.
	HoldTTLDefault time.Duration
	// LegacyExpireInterval paces the legacy store's ExpireOnce, run by
	// Start (the Redis design's expiry gives units back only when swept).
	// Defaults to 5 seconds; negative disables it, for a legacy whose own
	// process still expires its holds.
	LegacyExpireInterval time.Duration
	// DefaultMode is the mode of shops not enrolled. Defaults to
	// ModeLegacy.
	DefaultMode Mode
	// Now replaces the clock that decides warming and stamps mode changes,
	// for tests. Nil uses the database's clock for stamps and time.Now for
	// warming.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Engine is the shadow layer: it wraps a legacy store and a holdfast engine
// and is itself a holdfast.Engine, routing each shop's operations by the
// shop's mode and comparing both answers where both are written. It is
// safe for concurrent use; any number of Engines (replicas) may share a
// database.
type Engine struct {
	st  Store
	old legacy.Store
	hf  holdfast.Engine
	cfg Config

	mu     sync.Mutex
	modes  atomic.Pointer[modeTable]
	change chan struct{}

	rec     recorder
	metrics *metricSet
	workers []*maint.Worker
}

var _ holdfast.Engine = (*Engine)(nil)

// New returns an Engine over the legacy store and the holdfast engine, with
// its mode table and comparison records in st (postgres/pgshadow.Store).
// It loads the modes before returning. For admin use only (modes, reports,
// plans, reverts) old and hf may be nil: Reconcile, SyncStock and moves to
// shadow then return ErrNoBackends, and the holdfast.Engine operations must
// not be called.
func New(ctx context.Context, st Store, old legacy.Store, hf holdfast.Engine, cfg Config) (*Engine, error) {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = PollIntervalDefault
	}
	if cfg.PollInterval > PollIntervalMax {
		return nil, &holdfast.ArgumentError{Field: "PollInterval", Reason: fmt.Sprintf("at most %v, so every replica applies a change within a second", PollIntervalMax)}
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = FlushIntervalDefault
	}
	if cfg.HoldLifetimeMax <= 0 {
		cfg.HoldLifetimeMax = holdfast.HoldLifetimeMaxDefault
	}
	if cfg.HoldTTLDefault <= 0 {
		cfg.HoldTTLDefault = holdfast.HoldTTLDefault
	}
	if cfg.LegacyExpireInterval == 0 {
		cfg.LegacyExpireInterval = 5 * time.Second
	}
	if cfg.DefaultMode == "" {
		cfg.DefaultMode = ModeLegacy
	}
	if !cfg.DefaultMode.Valid() {
		return nil, &ModeError{Err: ErrUnknownMode, Mode: cfg.DefaultMode}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := &Engine{st: st, old: old, hf: hf, cfg: cfg, change: make(chan struct{}), metrics: newMetricSet()}
	e.rec.init()
	e.modes.Store(&modeTable{revision: -1, shops: map[int64]ShopMode{}})
	if err := e.Refresh(ctx); err != nil {
		return nil, err
	}
	e.workers = []*maint.Worker{
		{Name: "shadow-modes", Interval: cfg.PollInterval, Logger: cfg.Logger, Step: func(ctx context.Context) (bool, error) { return false, e.Refresh(ctx) }},
		{Name: "shadow-flush", Interval: cfg.FlushInterval, Logger: cfg.Logger, Step: func(ctx context.Context) (bool, error) { return false, e.Flush(ctx) }},
	}
	if cfg.LegacyExpireInterval > 0 && old != nil {
		e.workers = append(e.workers, &maint.Worker{Name: "shadow-legacy-expiry", Interval: cfg.LegacyExpireInterval, Logger: cfg.Logger,
			Step: func(ctx context.Context) (bool, error) { _, err := old.ExpireOnce(ctx); return false, err }})
	}
	return e, nil
}

// Legacy is the wrapped legacy store.
func (e *Engine) Legacy() legacy.Store { return e.old }

// Holdfast is the wrapped holdfast engine.
func (e *Engine) Holdfast() holdfast.Engine { return e.hf }

// Collectors are the layer's Prometheus metrics, to register.
func (e *Engine) Collectors() []prometheus.Collector { return e.metrics.collectors() }

// bound is the mode an operation runs under, read once when it starts.
type bound struct {
	mode    Mode
	warming bool
}

func (e *Engine) bind(shop int64) bound {
	m, ok := e.modes.Load().shops[shop]
	if !ok {
		return bound{mode: e.cfg.DefaultMode}
	}
	b := bound{mode: m.Mode}
	if (m.Mode == ModeShadow || m.Mode == ModePrimary) && !m.ShadowSince.IsZero() {
		b.warming = e.now().Before(m.ShadowSince.Add(e.cfg.HoldLifetimeMax))
	}
	return b
}

func (e *Engine) now() time.Time {
	if e.cfg.Now != nil {
		return e.cfg.Now()
	}
	return time.Now()
}

// Operation names, used in metrics, stats and samples.
const (
	OpReserve = "reserve"
	OpClaim   = "claim"
	OpRelease = "release"
	OpExtend  = "extend"
	OpHold    = "hold"
	OpStock   = "stock"
)

type answer struct {
	h        *holdfast.Hold
	err      error
	d        time.Duration
	holdfast bool // the answer is holdfast's (else the legacy's)
}

func timed(ctx context.Context, fn func(context.Context) (*holdfast.Hold, error)) answer {
	start := time.Now()
	h, err := fn(ctx)
	return answer{h: h, err: err, d: time.Since(start)}
}

func timedSide(ctx context.Context, isHoldfast bool, fn func(context.Context) (*holdfast.Hold, error)) answer {
	a := timed(ctx, fn)
	a.holdfast = isHoldfast
	return a
}

// dual runs one operation on the sides the bound mode writes and answers
// the truth's answer. lifecycle operations (claim, release, extend, hold)
// fall back to the other side when the truth does not know the checkout:
// a hold acknowledged under the other truth (before a revert, or whose
// mirror was refused) stays claimable.
func (e *Engine) dual(ctx context.Context, shop int64, op string, req any, lifecycle bool,
	onLegacy, onHoldfast func(context.Context) (*holdfast.Hold, error)) (*holdfast.Hold, error) {
	truth, _, _ := e.dualAnswers(ctx, shop, op, req, lifecycle, onLegacy, onHoldfast)
	return truth.h, truth.err
}

// dualAnswers is dual returning the truth's answer, the other side's (zero
// when it was not written) and the mode the operation was bound to.
func (e *Engine) dualAnswers(ctx context.Context, shop int64, op string, req any, lifecycle bool,
	onLegacy, onHoldfast func(context.Context) (*holdfast.Hold, error)) (answer, answer, bound) {
	b := e.bind(shop)
	switch b.mode {
	case ModeLegacy, ModeHoldfast:
		hfFirst := b.mode == ModeHoldfast
		first, second := onLegacy, onHoldfast
		if hfFirst {
			first, second = onHoldfast, onLegacy
		}
		a := timedSide(ctx, hfFirst, first)
		e.recordSingle(shop, op, b.mode, a)
		if lifecycle && errors.Is(a.err, holdfast.ErrNotFound) {
			if o := timedSide(ctx, !hfFirst, second); o.err == nil || !errors.Is(o.err, holdfast.ErrNotFound) {
				e.metrics.fallback.WithLabelValues(shopLabel(shop), op).Inc()
				return o, a, b
			}
		}
		return a, answer{}, b
	}
	var l, h answer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h = timedSide(ctx, true, onHoldfast) }()
	l = timedSide(ctx, false, onLegacy)
	wg.Wait()
	e.compare(shop, op, b, req, l, h)
	truth, other := l, h
	if b.mode == ModePrimary {
		truth, other = h, l
	}
	if lifecycle && errors.Is(truth.err, holdfast.ErrNotFound) && other.err == nil {
		e.metrics.fallback.WithLabelValues(shopLabel(shop), op).Inc()
		return other, truth, b
	}
	return truth, other, b
}

// Reserve implements holdfast.Engine.
func (e *Engine) Reserve(ctx context.Context, p holdfast.ReserveParams) (*holdfast.Hold, error) {
	if p.Wait != 0 {
		return nil, errNoWaitlist // waitlist.go
	}
	if err := refuseAllocation(p); err != nil { // allocate.go
		return nil, err
	}
	if p.TTL == 0 {
		p.TTL = e.cfg.HoldTTLDefault
	}
	truth, other, b := e.dualAnswers(ctx, p.ShopID, OpReserve, p, false,
		func(ctx context.Context) (*holdfast.Hold, error) { return e.old.Reserve(ctx, p) },
		func(ctx context.Context) (*holdfast.Hold, error) { return e.hf.Reserve(ctx, p) })
	h, err := truth.h, truth.err
	// Mirror the truth: when the truth refused but the other side just
	// held, give the other side's units back so it does not hold stock for
	// a checkout the caller was told failed.
	if refusal(err) && other.err == nil && other.h != nil && !other.h.Replayed && (b.mode == ModeShadow || b.mode == ModePrimary) {
		release := e.hf.Release
		if b.mode == ModePrimary {
			release = e.old.Release
		}
		if _, rerr := release(context.WithoutCancel(ctx), p.ShopID, p.CheckoutID); rerr != nil && !errors.Is(rerr, holdfast.ErrNotFound) &&
			!errors.Is(rerr, holdfast.ErrHoldClaimed) {
			e.cfg.Logger.Warn("shadow: compensating release failed", "shop", p.ShopID, "checkout", p.CheckoutID, "err", rerr)
		}
	}
	return h, err
}

// refusal reports whether err is a definite "nothing was held" answer.
func refusal(err error) bool {
	return errors.Is(err, holdfast.ErrInsufficientStock)
}

// Claim implements holdfast.Engine. A claim the truth did not know and the
// other side answered (a hold acknowledged under the other truth, or whose
// mirror the truth refused) also deducts the lines from the truth's ledger
// as a stock change, so the side that is now the truth does not sell the
// sold units again.
func (e *Engine) Claim(ctx context.Context, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	truth, other, b := e.dualAnswers(ctx, shop, OpClaim, checkoutReq{shop, checkout, 0}, true,
		func(ctx context.Context) (*holdfast.Hold, error) { return e.old.Claim(ctx, shop, checkout) },
		func(ctx context.Context) (*holdfast.Hold, error) { return e.hf.Claim(ctx, shop, checkout) })
	if truth.err == nil && truth.h != nil && !truth.h.Replayed && errors.Is(other.err, holdfast.ErrNotFound) {
		// The side that did not know the hold is other's side; the legacy
		// is not written in mode holdfast.
		if other.holdfast || b.mode != ModeHoldfast {
			e.deductMissing(context.WithoutCancel(ctx), truth.h, other.holdfast)
		}
	}
	return truth.h, truth.err
}

// deductMissing deducts a hold claimed on one side from the other side's
// ledger (holdfast's when toHoldfast).
func (e *Engine) deductMissing(ctx context.Context, h *holdfast.Hold, toHoldfast bool) {
	for _, l := range h.Lines {
		ch := holdfast.StockChange{Key: holdfast.Key{ShopID: h.ShopID, ItemID: l.ItemID, LocationID: l.LocationID},
			Delta: -l.Quantity, Reason: "shadow: claim answered by the other side", Reference: h.CheckoutID.String()}
		var err error
		if toHoldfast {
			_, err = e.hf.ChangeStock(ctx, ch)
		} else {
			_, err = e.old.ChangeStock(ctx, ch)
		}
		if err != nil {
			e.cfg.Logger.Warn("shadow: deducting a claim answered by the other side failed; reconcile the key", "key", ch.Key, "checkout", h.CheckoutID, "err", err)
		}
	}
	e.metrics.mirrored.WithLabelValues(shopLabel(h.ShopID)).Inc()
}

// Release implements holdfast.Engine.
func (e *Engine) Release(ctx context.Context, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	return e.dual(ctx, shop, OpRelease, checkoutReq{shop, checkout, 0}, true,
		func(ctx context.Context) (*holdfast.Hold, error) { return e.old.Release(ctx, shop, checkout) },
		func(ctx context.Context) (*holdfast.Hold, error) { return e.hf.Release(ctx, shop, checkout) })
}

// Extend implements holdfast.Engine.
func (e *Engine) Extend(ctx context.Context, shop int64, checkout uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	return e.dual(ctx, shop, OpExtend, checkoutReq{shop, checkout, ttl}, true,
		func(ctx context.Context) (*holdfast.Hold, error) { return e.old.Extend(ctx, shop, checkout, ttl) },
		func(ctx context.Context) (*holdfast.Hold, error) { return e.hf.Extend(ctx, shop, checkout, ttl) })
}

// Hold implements holdfast.Engine. Reads are answered by the truth side
// only (falling back like the lifecycle operations), and not compared.
func (e *Engine) Hold(ctx context.Context, shop int64, checkout uuid.UUID) (*holdfast.Hold, error) {
	first, second := e.old.Hold, e.hf.Hold
	if m := e.bind(shop).mode; m == ModePrimary || m == ModeHoldfast {
		first, second = second, first
	}
	h, err := first(ctx, shop, checkout)
	if errors.Is(err, holdfast.ErrNotFound) {
		if h2, err2 := second(ctx, shop, checkout); err2 == nil {
			return h2, nil
		}
	}
	return h, err
}

type checkoutReq struct {
	ShopID     int64         `json:"shop_id"`
	CheckoutID uuid.UUID     `json:"checkout_id"`
	TTL        time.Duration `json:"ttl,omitempty"`
}

// ChangeStock implements holdfast.Engine: the change goes to holdfast in
// every mode (so holdfast has the stock when the shop starts shadowing) and
// to the legacy in every mode but holdfast. The answer is holdfast's level;
// a legacy failure is returned as the error (wrapping
// holdfast.ErrOutcomeUnknown: the change is half applied) with holdfast's
// level.
func (e *Engine) ChangeStock(ctx context.Context, ch holdfast.StockChange) (*holdfast.Level, error) {
	b := e.bind(ch.ShopID)
	lvl, err := e.hf.ChangeStock(ctx, ch)
	if err != nil || b.mode == ModeHoldfast {
		return lvl, err
	}
	ch.ExpectAvailable = nil // checked against holdfast's stock, the truth here
	if _, err := e.old.ChangeStock(ctx, ch); err != nil {
		// Half applied: never the retryable "unavailable" a bare connection
		// error means to callers, since a blind retry changes holdfast twice.
		return lvl, fmt.Errorf("shadow: holdfast changed, the legacy did not or may not have (reconcile the key): %w: %w", holdfast.ErrOutcomeUnknown, err)
	}
	return lvl, nil
}

// SetStrategy implements holdfast.Engine (holdfast only).
func (e *Engine) SetStrategy(ctx context.Context, k holdfast.Key, s holdfast.Strategy, poolCap int) (*holdfast.Level, error) {
	return e.hf.SetStrategy(ctx, k, s, poolCap)
}

// Level implements holdfast.Engine: holdfast's level where holdfast is the
// truth; where the legacy is, the legacy's counts in holdfast's nouns
// (Available = on hand, Sellable = the counter, Held = the difference).
func (e *Engine) Level(ctx context.Context, k holdfast.Key) (*holdfast.Level, error) {
	if m := e.bind(k.ShopID).mode; m == ModePrimary || m == ModeHoldfast {
		return e.hf.Level(ctx, k)
	}
	c, err := e.old.Count(ctx, k)
	if err != nil {
		return nil, err
	}
	lvl, err := e.hf.Level(ctx, k)
	if err != nil {
		lvl = &holdfast.Level{Key: k}
	}
	out := *lvl
	out.Available = int(c.OnHand)
	out.Sellable = int(max(c.Reservable, 0))
	out.Held = int(c.OnHand - c.Reservable)
	out.Pooled = 0
	return &out, nil
}

// CheckInvariant implements holdfast.Engine (holdfast's database).
func (e *Engine) CheckInvariant(ctx context.Context) (*holdfast.InvariantReport, error) {
	return e.hf.CheckInvariant(ctx)
}

// SweepOnce implements holdfast.Engine: it expires due holds on both sides
// and returns the sum.
func (e *Engine) SweepOnce(ctx context.Context) (int, error) {
	n, err := e.hf.SweepOnce(ctx)
	if err != nil {
		return n, err
	}
	m, err := e.old.ExpireOnce(ctx)
	return n + m, err
}

// Start implements holdfast.Engine: holdfast's workers, the mode poll, the
// comparison flush and the legacy's expiry.
func (e *Engine) Start(ctx context.Context) {
	if e.hf != nil {
		e.hf.Start(ctx)
	}
	for _, w := range e.workers {
		w.Start(ctx)
	}
}

// Stop implements holdfast.Engine; it flushes the comparison counters.
func (e *Engine) Stop(ctx context.Context) error {
	var errs []error
	for _, w := range e.workers {
		errs = append(errs, w.Stop(ctx))
	}
	errs = append(errs, e.Flush(ctx))
	if e.hf != nil {
		errs = append(errs, e.hf.Stop(ctx))
	}
	return errors.Join(errs...)
}

func shopLabel(shop int64) string { return strconv.FormatInt(shop, 10) }

func sortShops(s []ShopMode) { sort.Slice(s, func(i, j int) bool { return s[i].ShopID < s[j].ShopID }) }
