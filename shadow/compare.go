package shadow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/legacy"
)

// Kinds of a comparison record. A disagreement's kind is KindUnits, KindError
// or "outcome:<legacy>/<holdfast>" with each side's Outcome, e.g.
// "outcome:ok/insufficient_stock" (the legacy held, holdfast refused).
const (
	// KindAgree: same outcome, same lines and units.
	KindAgree = "agree"
	// KindWarming: the answers differ while the shop's pre-shadow holds may
	// still be live: expected, not a disagreement.
	KindWarming = "warming"
	// KindUnits: same outcome, different lines, status or short units.
	KindUnits = "units"
	// KindError: a side failed with an unknown outcome (unavailable).
	KindError = "error"
	// KindSkipped: the legacy does not support the operation.
	KindSkipped = "skipped"
	// KindLegacyOnly and KindHoldfastOnly count the traffic of shops whose
	// mode writes one side: observed traffic for the plan, not compared.
	KindLegacyOnly   = "only:legacy"
	KindHoldfastOnly = "only:holdfast"
	// kindOutcomePrefix prefixes an outcome disagreement.
	kindOutcomePrefix = "outcome:"
)

// IsDisagreement reports whether a comparison kind is a disagreement.
func IsDisagreement(kind string) bool {
	switch kind {
	case KindAgree, KindWarming, KindSkipped, KindLegacyOnly, KindHoldfastOnly:
		return false
	}
	return true
}

// IsCompared reports whether a kind is a comparison that counts toward the
// agreement rate (agreements and disagreements; not warming or one-sided).
func IsCompared(kind string) bool { return kind == KindAgree || IsDisagreement(kind) }

// Outcome classifies one side's answer: ok, insufficient_stock, not_found,
// claimed, released, expired, lifetime_exceeded, conflict, over_committed,
// invalid, unsupported, unavailable.
func Outcome(h *holdfast.Hold, err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, holdfast.ErrInsufficientStock):
		return "insufficient_stock"
	case errors.Is(err, holdfast.ErrNotFound):
		return "not_found"
	case errors.Is(err, holdfast.ErrHoldClaimed):
		return "claimed"
	case errors.Is(err, holdfast.ErrHoldReleased):
		return "released"
	case errors.Is(err, holdfast.ErrHoldExpired):
		return "expired"
	case errors.Is(err, holdfast.ErrLifetimeExceeded):
		return "lifetime_exceeded"
	case errors.Is(err, holdfast.ErrIdempotencyConflict):
		return "conflict"
	case errors.Is(err, holdfast.ErrOverCommitted):
		return "over_committed"
	case errors.Is(err, holdfast.ErrInvalidArgument):
		return "invalid"
	case errors.Is(err, legacy.ErrUnsupported):
		return "unsupported"
	}
	return "unavailable"
}

// classify compares both answers of one operation.
func classify(warming bool, l, h answer) string {
	lo, ho := Outcome(l.h, l.err), Outcome(h.h, h.err)
	if lo == "unsupported" || ho == "unsupported" {
		return KindSkipped
	}
	kind := KindAgree
	switch {
	case lo == "unavailable" || ho == "unavailable":
		return KindError // a failure is never excused as warming
	case lo != ho:
		kind = kindOutcomePrefix + lo + "/" + ho
	case lo == "ok":
		if l.h.Status != h.h.Status || !slices.Equal(l.h.Lines, h.h.Lines) {
			kind = KindUnits
		}
	case lo == "insufficient_stock":
		var a, b *holdfast.InsufficientStockError
		if errors.As(l.err, &a) && errors.As(h.err, &b) && !slices.Equal(a.Lines, b.Lines) {
			kind = KindUnits
		}
	}
	if kind != KindAgree && warming {
		return KindWarming
	}
	return kind
}

// latencyBounds are the upper bounds of the comparison's latency buckets:
// 50µs × 1.5^i; the last bucket is everything slower.
var latencyBounds = func() []time.Duration {
	out := make([]time.Duration, 31)
	d := float64(50 * time.Microsecond)
	for i := range out {
		out[i] = time.Duration(d)
		d *= 1.5
	}
	return out
}()

func bucketOf(d time.Duration) int {
	i, _ := slices.BinarySearch(latencyBounds, d)
	return i // len(latencyBounds) is the overflow bucket
}

type statKey struct {
	shop     int64
	op, kind string
}

type stat struct {
	n    int64
	l, h []int64 // len(latencyBounds)+1
}

func newStat() *stat {
	return &stat{l: make([]int64, len(latencyBounds)+1), h: make([]int64, len(latencyBounds)+1)}
}

func (s *stat) add(o *stat) {
	s.n += o.n
	for i := range s.l {
		s.l[i] += o.l[i]
		s.h[i] += o.h[i]
	}
}

// Sample is one recorded disagreement: the request and both answers.
type Sample struct {
	ID         int64           `json:"id"`
	ShopID     int64           `json:"shop_id"`
	Op         string          `json:"op"`
	Kind       string          `json:"kind"`
	Request    json.RawMessage `json:"request"`
	Legacy     json.RawMessage `json:"legacy"`
	Holdfast   json.RawMessage `json:"holdfast"`
	RecordedAt time.Time       `json:"recorded_at"`
}

// recorder buffers comparison counters and samples between flushes.
type recorder struct {
	mu      sync.Mutex
	stats   map[statKey]*stat
	samples []Sample
	dropped int64
}

func (r *recorder) init() { r.stats = map[statKey]*stat{} }

func (r *recorder) add(k statKey, l, h time.Duration, withL, withH bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats[k]
	if s == nil {
		s = newStat()
		r.stats[k] = s
	}
	s.n++
	if withL {
		s.l[bucketOf(l)]++
	}
	if withH {
		s.h[bucketOf(h)]++
	}
}

type answerJSON struct {
	Outcome string         `json:"outcome"`
	Error   string         `json:"error,omitempty"`
	Hold    *holdfast.Hold `json:"hold,omitempty"`
	Millis  float64        `json:"ms"`
}

func answerDoc(a answer) json.RawMessage {
	doc := answerJSON{Outcome: Outcome(a.h, a.err), Hold: a.h, Millis: float64(a.d.Microseconds()) / 1000}
	if a.err != nil {
		doc.Error = a.err.Error()
	}
	b, _ := json.Marshal(doc)
	return b
}

func (e *Engine) compare(shop int64, op string, b bound, req any, l, h answer) {
	kind := classify(b.warming, l, h)
	e.rec.add(statKey{shop, op, kind}, l.d, h.d, true, true)
	sl := shopLabel(shop)
	e.metrics.ops.WithLabelValues(sl, op, kind).Inc()
	e.metrics.latency.WithLabelValues(sl, op, "legacy").Observe(l.d.Seconds())
	e.metrics.latency.WithLabelValues(sl, op, "holdfast").Observe(h.d.Seconds())
	if !IsDisagreement(kind) {
		return
	}
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	if len(e.rec.samples) >= SampleBufferMax {
		e.rec.dropped++
		return
	}
	rb, _ := json.Marshal(req)
	e.rec.samples = append(e.rec.samples, Sample{ShopID: shop, Op: op, Kind: kind, Request: rb, Legacy: answerDoc(l), Holdfast: answerDoc(h)})
}

func (e *Engine) recordSingle(shop int64, op string, mode Mode, a answer) {
	kind := KindLegacyOnly
	if mode == ModeHoldfast {
		kind = KindHoldfastOnly
	}
	e.rec.add(statKey{shop, op, kind}, a.d, a.d, mode == ModeLegacy, mode == ModeHoldfast)
	side := "legacy"
	if mode == ModeHoldfast {
		side = "holdfast"
	}
	sl := shopLabel(shop)
	e.metrics.ops.WithLabelValues(sl, op, kind).Inc()
	e.metrics.latency.WithLabelValues(sl, op, side).Observe(a.d.Seconds())
}

// Flush writes the buffered comparison counters and disagreement samples
// to the database (the background worker calls it every FlushInterval;
// Report calls it first). Counters that fail to flush are kept for the
// next flush.
func (e *Engine) Flush(ctx context.Context) error {
	e.rec.mu.Lock()
	stats, samples := e.rec.stats, e.rec.samples
	e.rec.stats, e.rec.samples = map[statKey]*stat{}, nil
	e.rec.mu.Unlock()
	if len(stats) == 0 && len(samples) == 0 {
		return nil
	}
	counts := make([]Counts, 0, len(stats))
	for k, s := range stats {
		counts = append(counts, Counts{ShopID: k.shop, Op: k.op, Kind: k.kind, N: s.n, Legacy: s.l, Holdfast: s.h})
	}
	err := e.st.AddComparisons(ctx, counts, samples, SamplesPerShopMax)
	if err != nil {
		e.rec.mu.Lock()
		for k, s := range stats {
			if cur := e.rec.stats[k]; cur != nil {
				cur.add(s)
			} else {
				e.rec.stats[k] = s
			}
		}
		e.rec.dropped += int64(len(samples))
		e.rec.mu.Unlock()
		return fmt.Errorf("shadow: flush comparisons: %w", err)
	}
	return nil
}

// metricSet is the layer's Prometheus metrics. The shop label's cardinality
// is the enrolled shops.
type metricSet struct {
	ops      *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	mode     *prometheus.GaugeVec
	fallback *prometheus.CounterVec
	mirrored *prometheus.CounterVec
}

func newMetricSet() *metricSet {
	return &metricSet{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "holdfast_shadow_ops_total",
			Help: "Operations through the shadow layer by shop, operation and comparison kind (agree, warming, units, error, outcome:<legacy>/<holdfast>, only:legacy, only:holdfast).",
		}, []string{"shop", "op", "kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "holdfast_shadow_op_duration_seconds",
			Help:    "Each side's duration of operations through the shadow layer, by shop, operation and side (legacy, holdfast).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"shop", "op", "side"}),
		mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "holdfast_shadow_mode",
			Help: "1 for each shop's current mode (legacy, shadow, primary, holdfast) on this replica.",
		}, []string{"shop", "mode"}),
		fallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "holdfast_shadow_fallbacks_total",
			Help: "Lifecycle operations the truth side did not know and the other side answered (holds acknowledged under the other truth).",
		}, []string{"shop", "op"}),
		mirrored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "holdfast_shadow_claims_deducted_other_side_total",
			Help: "Claims answered by the side that was not the truth, deducted from the truth's ledger as a stock change.",
		}, []string{"shop"}),
	}
}

func (m *metricSet) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.ops, m.latency, m.mode, m.fallback, m.mirrored}
}
