package shadow

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/holdfast/holdfast"
)

// Latency is one side's latency percentiles, each the upper bound of the
// comparison bucket it falls in (buckets grow by 1.5×).
type Latency struct {
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
}

// ShopReport is one shop's comparison so far.
type ShopReport struct {
	ShopID int64 `json:"shop_id"`
	Mode   Mode  `json:"mode"`
	// Warming is true while pre-shadow holds may be live (until ReadyAt).
	Warming bool      `json:"warming"`
	ReadyAt time.Time `json:"ready_at,omitzero"`
	// Ops is every operation seen for the shop, compared or not: its
	// observed traffic.
	Ops int64 `json:"ops"`
	// Compared counts agreements and disagreements (not warming, skipped or
	// one-sided operations); AgreementRate is Agreed / Compared (0 when
	// nothing was compared).
	Compared      int64            `json:"compared"`
	Agreed        int64            `json:"agreed"`
	AgreementRate float64          `json:"agreement_rate"`
	WarmingOps    int64            `json:"warming_ops"`
	Disagreements map[string]int64 `json:"disagreements"`
	Legacy        Latency          `json:"legacy"`
	Holdfast      Latency          `json:"holdfast"`
}

// Report flushes this replica's counters and returns every shop with
// traffic or enrollment, by shop id.
func (e *Engine) Report(ctx context.Context) ([]ShopReport, error) {
	if err := e.Flush(ctx); err != nil {
		return nil, err
	}
	if err := e.Refresh(ctx); err != nil {
		return nil, err
	}
	counts, err := e.st.Counts(ctx)
	if err != nil {
		return nil, fmt.Errorf("shadow: report: %w", err)
	}
	byShop := map[int64]*ShopReport{}
	lat := map[int64][2]*stat{}
	get := func(shop int64) *ShopReport {
		r := byShop[shop]
		if r == nil {
			r = &ShopReport{ShopID: shop, Mode: e.cfg.DefaultMode, Disagreements: map[string]int64{}}
			byShop[shop] = r
			lat[shop] = [2]*stat{newStat(), newStat()}
		}
		return r
	}
	for _, c := range counts {
		shop, kind, n, l, h := c.ShopID, c.Kind, c.N, c.Legacy, c.Holdfast
		r := get(shop)
		r.Ops += n
		switch {
		case kind == KindAgree:
			r.Agreed += n
			r.Compared += n
		case kind == KindWarming:
			r.WarmingOps += n
		case IsDisagreement(kind):
			r.Compared += n
			r.Disagreements[kind] += n
		}
		ls := lat[shop]
		for i := range min(len(l), len(ls[0].l)) {
			ls[0].l[i] += l[i]
			ls[1].h[i] += h[i]
		}
	}
	for _, m := range e.ShopModes() {
		r := get(m.ShopID)
		r.Mode = m.Mode
		if (m.Mode == ModeShadow || m.Mode == ModePrimary) && !m.ShadowSince.IsZero() {
			r.ReadyAt = m.ShadowSince.Add(e.cfg.HoldLifetimeMax)
			r.Warming = e.now().Before(r.ReadyAt)
		}
	}
	out := make([]ShopReport, 0, len(byShop))
	for shop, r := range byShop {
		if r.Compared > 0 {
			r.AgreementRate = float64(r.Agreed) / float64(r.Compared)
		}
		r.Legacy = percentiles(lat[shop][0].l)
		r.Holdfast = percentiles(lat[shop][1].h)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ShopID < out[j].ShopID })
	return out, nil
}

func percentiles(b []int64) Latency {
	var total int64
	for _, n := range b {
		total += n
	}
	if total == 0 {
		return Latency{}
	}
	at := func(q float64) time.Duration {
		want := int64(q*float64(total)) + 1
		var seen int64
		for i, n := range b {
			seen += n
			if seen >= want {
				if i < len(latencyBounds) {
					return latencyBounds[i]
				}
				break
			}
		}
		return latencyBounds[len(latencyBounds)-1] * 3 / 2
	}
	return Latency{P50: at(0.50), P99: at(0.99)}
}

// Thresholds decide when a shop is ready for its next mode. The zero value
// of each field means its default.
type Thresholds struct {
	// AgreementMin defaults to 0.999.
	AgreementMin float64 `json:"agreement_min"`
	// ComparedMin is the sample size needed. Defaults to 1,000.
	ComparedMin int64 `json:"compared_min"`
	// P99RatioMax bounds holdfast's p99 against the legacy's. Defaults to
	// 10 (holdfast commits durably; the legacy answers from memory).
	P99RatioMax float64 `json:"p99_ratio_max"`
	// P99Max bounds holdfast's p99 absolutely. Defaults to 250ms.
	P99Max time.Duration `json:"p99_max"`
	// Until is the furthest mode PromoteNext moves a shop to. Defaults to
	// ModeHoldfast; ModePrimary keeps every shop's dual write (and so the
	// kill switch) armed.
	Until Mode `json:"until"`
}

// WithDefaults returns t with each zero field set to its default: the
// defaults the command line's threshold flags show.
func (t Thresholds) WithDefaults() Thresholds { return t.withDefaults() }

func (t Thresholds) withDefaults() Thresholds {
	if t.AgreementMin == 0 {
		t.AgreementMin = 0.999
	}
	if t.ComparedMin == 0 {
		t.ComparedMin = 1000
	}
	if t.P99RatioMax == 0 {
		t.P99RatioMax = 10
	}
	if t.P99Max == 0 {
		t.P99Max = 250 * time.Millisecond
	}
	if t.Until == "" {
		t.Until = ModeHoldfast
	}
	return t
}

// PlanEntry is one shop in the ramp: its report, the mode it would go to
// next, and whether it is ready (Why says what holds it back).
type PlanEntry struct {
	ShopReport
	Next  Mode   `json:"next,omitempty"`
	Ready bool   `json:"ready"`
	Why   string `json:"why"`
}

// Plan orders the enrolled shops smallest-first by observed traffic (the
// riskiest, highest-volume shop last) and marks which are ready for their
// next mode: legacy → shadow always; shadow → primary and primary →
// holdfast once not warming, with at least ComparedMin compared operations,
// an agreement rate of at least AgreementMin and holdfast's p99 within
// bounds.
func (e *Engine) Plan(ctx context.Context, th Thresholds) ([]PlanEntry, error) {
	th = th.withDefaults()
	reps, err := e.Report(ctx)
	if err != nil {
		return nil, err
	}
	var out []PlanEntry
	for _, r := range reps {
		if _, ok := e.Mode(r.ShopID); !ok {
			continue
		}
		p := PlanEntry{ShopReport: r, Next: r.Mode.Next()}
		switch {
		case p.Next == "":
			p.Why = "done: holdfast only"
		case r.Mode == ModeLegacy:
			p.Ready, p.Why = true, "shadow is safe: the legacy stays the truth"
		case r.Warming:
			p.Why = "warming until " + r.ReadyAt.Format(time.RFC3339)
		case r.Compared < th.ComparedMin:
			p.Why = fmt.Sprintf("%d compared operations, need %d", r.Compared, th.ComparedMin)
		case r.AgreementRate < th.AgreementMin:
			p.Why = fmt.Sprintf("agreement %.4f below %.4f", r.AgreementRate, th.AgreementMin)
		case r.Holdfast.P99 > th.P99Max:
			p.Why = fmt.Sprintf("holdfast p99 %v above %v", r.Holdfast.P99, th.P99Max)
		case r.Legacy.P99 > 0 && float64(r.Holdfast.P99) > th.P99RatioMax*float64(r.Legacy.P99):
			p.Why = fmt.Sprintf("holdfast p99 %v above %.0f× legacy p99 %v", r.Holdfast.P99, th.P99RatioMax, r.Legacy.P99)
		default:
			p.Ready, p.Why = true, fmt.Sprintf("agreement %.4f over %d operations", r.AgreementRate, r.Compared)
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Ops != out[j].Ops {
			return out[i].Ops < out[j].Ops
		}
		return out[i].ShopID < out[j].ShopID
	})
	return out, nil
}

// ErrNoBackends: the Engine was made without a legacy store or a holdfast
// engine (admin use: modes and reports only), and the call needs both.
var ErrNoBackends = errors.New("shadow: this Engine has no legacy store or holdfast engine (give New both)")

// ErrNothingReady: PromoteNext found no shop ready for its next mode.
var ErrNothingReady = errors.New("shadow: no shop is ready to promote")

// PromoteNext promotes the first ready shop of the plan (the smallest by
// traffic) one step and returns its entry with Mode the new mode.
func (e *Engine) PromoteNext(ctx context.Context, th Thresholds) (*PlanEntry, error) {
	th = th.withDefaults()
	if !th.Until.Valid() {
		return nil, &ModeError{Err: ErrUnknownMode, Mode: th.Until}
	}
	plan, err := e.Plan(ctx, th)
	if err != nil {
		return nil, err
	}
	for _, p := range plan {
		if !p.Ready || p.Next == "" || p.Next.index() > th.Until.index() {
			continue
		}
		if err := e.SetMode(ctx, p.ShopID, p.Next, "promote next"); err != nil {
			return nil, err
		}
		p.Mode = p.Next
		p.Next = p.Mode.Next()
		return &p, nil
	}
	return nil, ErrNothingReady
}

// Samples returns up to limit (at most SamplesPerShopMax) of the shop's
// newest recorded disagreements.
func (e *Engine) Samples(ctx context.Context, shop int64, limit int) ([]Sample, error) {
	if limit <= 0 || limit > SamplesPerShopMax {
		limit = SamplesPerShopMax
	}
	if err := e.Flush(ctx); err != nil {
		return nil, err
	}
	out, err := e.st.Samples(ctx, shop, limit)
	if err != nil {
		return nil, fmt.Errorf("shadow: samples: %w", err)
	}
	return out, nil
}

// ReconcileKeysMax bounds the keys one Reconcile compares.
const ReconcileKeysMax = 10_000

// Drift is one key whose legacy counts differ from holdfast's.
type Drift struct {
	holdfast.Key
	LegacyOnHand     int64  `json:"legacy_on_hand"`
	LegacyReservable int64  `json:"legacy_reservable"`
	Available        int    `json:"available"`
	Sellable         int    `json:"sellable"`
	Held             int    `json:"held"`
	Cause            string `json:"cause"`
}

// Reconciliation is Reconcile's answer.
type Reconciliation struct {
	ShopID int64   `json:"shop_id"`
	Mode   Mode    `json:"mode"`
	Keys   int     `json:"keys"`
	Drift  []Drift `json:"drift"`
}

// Reconcile compares the legacy's counts with holdfast's stock for every
// key holdfast stocks for the shop (up to ReconcileKeysMax) plus extra,
// and lists the keys that drift with their likely cause. It reads only.
func (e *Engine) Reconcile(ctx context.Context, shop int64, extra ...holdfast.Key) (*Reconciliation, error) {
	if e.old == nil || e.hf == nil {
		return nil, ErrNoBackends
	}
	m, ok := e.Mode(shop)
	if !ok {
		return nil, &ModeError{Err: ErrUnknownShop, Shop: shop}
	}
	keys, err := e.st.StockedKeys(ctx, shop, ReconcileKeysMax)
	if err != nil {
		return nil, fmt.Errorf("shadow: reconcile: %w", err)
	}
	seen := map[holdfast.Key]bool{}
	for _, k := range keys {
		seen[k] = true
	}
	for _, k := range extra {
		if k.ShopID == shop && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	out := &Reconciliation{ShopID: shop, Mode: m, Keys: len(keys)}
	warming := e.bind(shop).warming
	for _, k := range keys {
		c, err := e.old.Count(ctx, k)
		if err != nil {
			return nil, err
		}
		lvl, err := e.hf.Level(ctx, k)
		if err != nil {
			return nil, err
		}
		if c.OnHand == int64(lvl.Available) && c.Reservable == int64(lvl.Sellable) {
			continue
		}
		d := Drift{Key: k, LegacyOnHand: c.OnHand, LegacyReservable: c.Reservable, Available: lvl.Available, Sellable: lvl.Sellable, Held: lvl.Held}
		d.Cause = cause(m, warming, d)
		out.Drift = append(out.Drift, d)
	}
	return out, nil
}

func cause(m Mode, warming bool, d Drift) string {
	switch {
	case m == ModeHoldfast:
		return "the legacy is no longer written (mode holdfast): expected"
	case m == ModeLegacy:
		return "holdfast is not written in legacy mode (stock changes only): expected until shadow"
	case d.LegacyOnHand != int64(d.Available):
		return "the ledgers differ: a claim deducted one side only (a legacy crash between its ledger write and its Redis cleanup, or a claim one side refused), or a stock change reached one side"
	case warming && d.LegacyReservable < int64(d.Sellable):
		return "pre-shadow holds still live in the legacy only (warming): expected"
	case d.LegacyReservable < int64(d.Sellable):
		return "the legacy holds more units: a legacy hold whose claim crashed before its Redis cleanup, or a hold holdfast refused or ended earlier"
	default:
		return "the legacy holds fewer units: a legacy hold expired or was released while holdfast's lives (holdfast sweeps later), or legacy expiry gave back units of a claimed hold"
	}
}
