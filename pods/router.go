package pods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/holdfast/holdfast"
)

// Bounds and defaults of a Router.
const (
	// CacheTTLDefault is how long a placement read from the map is
	// trusted while the router cannot follow the map's changes
	// (FollowInterval); while it follows them, cached placements are kept
	// until a change drops them (or the cache's bound does).
	CacheTTLDefault = time.Minute
	// CacheTTLMax bounds Config.CacheTTL.
	CacheTTLMax = 10 * time.Minute
	// FollowIntervalDefault paces the read of the map's recent changes: a
	// shop switched by any router is re-read by every router within about
	// this long.
	FollowIntervalDefault = time.Second
	// FollowWindow is how far back each read of the changes looks: changes
	// commit out of revision order, so a follower re-reads a window and
	// skips what it saw. A change that took longer than this to commit
	// could be missed until the TTL.
	FollowWindow = 30 * time.Second
	// FollowLimit bounds one read of the changes; a full read drops the
	// whole cache instead.
	FollowLimit = 10_000
	// CacheEntriesDefault bounds the placements a router keeps.
	CacheEntriesDefault = 100_000
	// StaleMaxDefault is how old a cached placement may be and still be
	// used while the map cannot be read.
	StaleMaxDefault = 15 * time.Minute
	// FailuresToDownDefault is how many consecutive failed calls mark a
	// pod down.
	FailuresToDownDefault = 3
	// ProbeIntervalDefault paces the probes of a pod that is down.
	ProbeIntervalDefault = 250 * time.Millisecond
	// ProbeTimeoutDefault bounds one probe.
	ProbeTimeoutDefault = time.Second
	// SilentAfterDefault: see Config.SilentAfter.
	SilentAfterDefault = 2 * time.Second
	// FanOutConcurrencyDefault bounds the pods asked at once by an
	// operation that spans shops.
	FanOutConcurrencyDefault = 4
	// FanOutTimeoutDefault bounds one pod's part of such an operation.
	FanOutTimeoutDefault = 30 * time.Second
	// MoveWaitDefault: see Config.MoveWait.
	MoveWaitDefault = 2 * time.Second
	// PodsMax bounds the pods of one router.
	PodsMax = 256
)

// Pod is one pod given to New: a name (as the map knows it) and the engine
// on the pod's database.
type Pod struct {
	Name   string
	Engine holdfast.Engine
	// Ping, when set, is the probe of a pod that is down (a pool's Ping);
	// nil probes with a read of a shop's location order (LocationOrder of
	// shop 1), which any engine answers from its database.
	Ping func(ctx context.Context) error
	// MaxInFlight bounds the calls in flight on the pod; past it a call of
	// one of its shops is answered ErrUnavailable at once. Reservations
	// the pod's engine combines (its Combinable) are not counted: they
	// wait in its combiner, bounded by the HTTP layer. It keeps a pod that
	// hangs from holding more than this many of the service's connection
	// slots until the breaker opens. 0: unbounded. Set it to the pod
	// pool's size.
	MaxInFlight int
}

// Config configures a Router. The zero value of every field means its
// default.
type Config struct {
	// CacheTTL defaults to CacheTTLDefault; at most CacheTTLMax.
	CacheTTL time.Duration
	// FollowInterval defaults to FollowIntervalDefault; negative: do not
	// follow (placements then change for this router only by TTL or
	// Invalidate).
	FollowInterval time.Duration
	// CacheEntries defaults to CacheEntriesDefault.
	CacheEntries int
	// StaleMax defaults to StaleMaxDefault. Using a stale placement is
	// safe because a shop is only ever switched after its source pod
	// fenced it: a request sent to the old pod is answered there
	// retriably (nothing applied), never applied to the wrong copy.
	StaleMax time.Duration
	// DefaultPod, when set, is where every new shop is placed. Empty: the
	// least-loaded policy — the pod with the fewest shops among those that
	// accept new shops and are up (ties by name).
	DefaultPod string
	// FailuresToDown defaults to FailuresToDownDefault.
	FailuresToDown int
	// ProbeInterval defaults to ProbeIntervalDefault.
	ProbeInterval time.Duration
	// ProbeTimeout defaults to ProbeTimeoutDefault.
	ProbeTimeout time.Duration
	// SilentAfter: a pod with calls in flight of which none returned for
	// this long is probed at once, and marked down when the probe fails —
	// a pod that hangs is found in SilentAfter + ProbeTimeout, not after
	// FailuresToDown calls each ran to its deadline. Defaults to
	// SilentAfterDefault.
	SilentAfter time.Duration
	// FanOutConcurrency defaults to FanOutConcurrencyDefault.
	FanOutConcurrency int
	// FanOutTimeout defaults to FanOutTimeoutDefault.
	FanOutTimeout time.Duration
	// MoveWait bounds how long a call of a shop that its pod answers
	// fenced (a move copying it: holdfast.ErrShopMoved) waits for the
	// switch or the fence's end before the retriable answer is returned;
	// nothing was applied, so the call is simply sent again. Defaults to
	// MoveWaitDefault; negative: do not wait (one retry where the map
	// says, as before).
	MoveWait time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the cache's clock, for tests. Defaults to time.Now.
	Now func() time.Time
}

// Router implements holdfast.Engine by shop over one engine per pod. It is
// safe for concurrent use.
type Router struct {
	m     Map
	cfg   Config
	pods  map[string]*pod
	order []*pod // by name
	cache *cache

	probeCtx    context.Context
	probeCancel context.CancelFunc
	probes      sync.WaitGroup

	stats      routerStats
	followedAt atomic.Int64 // unix ns (Config.Now) of the last read of the map's changes
}

var _ holdfast.Engine = (*Router)(nil)

// New returns a Router over m and pods. It registers the pods in the map
// (those missing) and refuses a map that places shops on a pod not given
// here (ErrUnknownPod): those shops would have nowhere to go.
func New(ctx context.Context, m Map, pods []Pod, cfg Config) (*Router, error) {
	if m == nil {
		return nil, &holdfast.ArgumentError{Field: "Map", Reason: "required"}
	}
	if len(pods) == 0 || len(pods) > PodsMax {
		return nil, &holdfast.ArgumentError{Field: "pods", Reason: fmt.Sprintf("between 1 and %d", PodsMax)}
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = CacheTTLDefault
	}
	if cfg.CacheTTL > CacheTTLMax {
		return nil, &holdfast.ArgumentError{Field: "CacheTTL", Reason: fmt.Sprintf("at most %v", CacheTTLMax)}
	}
	if cfg.FollowInterval == 0 {
		cfg.FollowInterval = FollowIntervalDefault
	}
	if cfg.CacheEntries <= 0 {
		cfg.CacheEntries = CacheEntriesDefault
	}
	if cfg.StaleMax <= 0 {
		cfg.StaleMax = StaleMaxDefault
	}
	if cfg.FailuresToDown <= 0 {
		cfg.FailuresToDown = FailuresToDownDefault
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = ProbeIntervalDefault
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = ProbeTimeoutDefault
	}
	if cfg.SilentAfter <= 0 {
		cfg.SilentAfter = SilentAfterDefault
	}
	if cfg.FanOutConcurrency <= 0 {
		cfg.FanOutConcurrency = FanOutConcurrencyDefault
	}
	if cfg.FanOutTimeout <= 0 {
		cfg.FanOutTimeout = FanOutTimeoutDefault
	}
	if cfg.MoveWait == 0 {
		cfg.MoveWait = MoveWaitDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Router{m: m, cfg: cfg, pods: make(map[string]*pod, len(pods)), cache: newCache(cfg.CacheEntries)}
	names := make([]string, 0, len(pods))
	for i, p := range pods {
		switch {
		case !ValidName(p.Name):
			return nil, &holdfast.ArgumentError{Field: fmt.Sprintf("pods[%d].name", i), Reason: NameRule}
		case p.Engine == nil:
			return nil, &holdfast.ArgumentError{Field: fmt.Sprintf("pods[%d].engine", i), Reason: "required"}
		case r.pods[p.Name] != nil:
			return nil, &holdfast.ArgumentError{Field: fmt.Sprintf("pods[%d].name", i), Reason: "named twice: " + p.Name}
		case p.MaxInFlight < 0:
			return nil, &holdfast.ArgumentError{Field: fmt.Sprintf("pods[%d].max_in_flight", i), Reason: "not negative"}
		}
		pp := &pod{name: p.Name, eng: p.Engine, ping: p.Ping, max: int64(p.MaxInFlight)}
		pp.lastDone.Store(time.Now().UnixNano())
		r.pods[p.Name] = pp
		r.order = append(r.order, pp)
		names = append(names, p.Name)
	}
	sort.Slice(r.order, func(i, j int) bool { return r.order[i].name < r.order[j].name })
	if cfg.DefaultPod != "" && r.pods[cfg.DefaultPod] == nil {
		return nil, &holdfast.ArgumentError{Field: "DefaultPod", Reason: "not one of the pods: " + cfg.DefaultPod}
	}
	if err := m.Register(ctx, names); err != nil {
		return nil, fmt.Errorf("pods: registering the pods in the map: %w", err)
	}
	infos, err := m.Pods(ctx)
	if err != nil {
		return nil, fmt.Errorf("pods: reading the map's pods: %w", err)
	}
	for _, in := range infos {
		if r.pods[in.Name] == nil && in.Shops > 0 {
			return nil, fmt.Errorf("%w: the map places %d shops on pod %q, which is not configured", ErrUnknownPod, in.Shops, in.Name)
		}
	}
	r.probeCtx, r.probeCancel = context.WithCancel(context.WithoutCancel(ctx))
	r.probes.Add(1)
	go r.watch()
	if cfg.FollowInterval > 0 {
		r.probes.Add(1)
		go r.follow()
	}
	return r, nil
}

// follow reads the map's recent changes every FollowInterval until the
// router stops, and drops the changed shops' cached placements.
func (r *Router) follow() {
	defer r.probes.Done()
	seen := map[int64]time.Time{} // revisions in the window, when first seen
	t := time.NewTicker(r.cfg.FollowInterval)
	defer t.Stop()
	for {
		select {
		case <-r.probeCtx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(r.probeCtx, r.cfg.ProbeTimeout)
		changes, err := r.m.Changes(ctx, FollowWindow, FollowLimit)
		cancel()
		if err != nil {
			r.stats.followErrors.Add(1)
			continue
		}
		now := r.cfg.Now()
		if last := r.followedAt.Load(); len(changes) >= FollowLimit || last != 0 && now.UnixNano()-last > int64(FollowWindow/2) {
			// Too many changes to apply one by one, or the router could not
			// read them for so long that this window may not reach back to
			// its last read: start from the map again.
			r.cache.clear()
		}
		for _, c := range changes {
			at, ok := seen[c.Revision]
			if !ok {
				at = now
				seen[c.Revision] = at
			}
			// The change committed before it was first seen: a placement
			// read from the map after that is current; one whose read began
			// before may be the old one (even if it was put in the cache
			// after the change was seen), so it is dropped — on every read
			// of the window, which catches such late puts too.
			r.cache.dropReadBefore(c.ShopID, at)
		}
		r.followedAt.Store(now.UnixNano())
		for rev, at := range seen {
			if now.Sub(at) > 2*FollowWindow {
				delete(seen, rev)
			}
		}
	}
}

// watch looks for silent pods every ProbeInterval until the router stops.
func (r *Router) watch() {
	defer r.probes.Done()
	t := time.NewTicker(r.cfg.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-r.probeCtx.Done():
			return
		case now := <-t.C:
			for _, p := range r.order {
				if p.silent(now, r.cfg.SilentAfter) && p.checking.CompareAndSwap(false, true) {
					r.probes.Add(1)
					go func() {
						defer r.probes.Done()
						defer p.checking.Store(false)
						if err := r.probe(p); err != nil && r.probeCtx.Err() == nil && p.markDown(fmt.Errorf("silent for %v with calls in flight, and a probe failed: %w", r.cfg.SilentAfter, err)) {
							r.cfg.Logger.Warn("pods: pod marked down: calls in flight, none returned, and a probe failed", "pod", p.name, "err", err)
							r.startProbe(p)
						}
					}()
				}
			}
		}
	}
}

// NameRule is what a pod's name must be.
const NameRule = "1 to 63 letters, digits, '_', '-' or '.'"

// ValidName reports whether name follows NameRule.
func ValidName(name string) bool {
	if name == "" || len(name) > 63 {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Pods are the configured pods' names, sorted.
func (r *Router) Pods() []string {
	out := make([]string, len(r.order))
	for i, p := range r.order {
		out[i] = p.name
	}
	return out
}

// Engine is the named pod's engine (nil when there is none): for per-pod
// administration (migrations, doctor) and direct benchmarks.
func (r *Router) Engine(name string) holdfast.Engine {
	if p := r.pods[name]; p != nil {
		return p.eng
	}
	return nil
}

// Map is the shard map the router reads.
func (r *Router) Map() Map { return r.m }

// Status is every pod's health, by name.
func (r *Router) Status() []PodStatus {
	out := make([]PodStatus, len(r.order))
	for i, p := range r.order {
		out[i] = p.status()
	}
	return out
}

// Invalidate drops the shop's cached placement: the next request reads
// the map. A move calls it on the router that switched the shop; other
// routers see the switch within CacheTTL (their requests meanwhile are
// answered retriably by the fenced source pod).
func (r *Router) Invalidate(shopID int64) { r.cache.drop(shopID) }

// InvalidateAll drops every cached placement.
func (r *Router) InvalidateAll() { r.cache.clear() }

// PodOf answers the name of the pod that serves the shop — placing a new
// shop, as its first write would, when assign is set — for what keeps a
// shop's rows beside the engine's (serve's webhook registry).
func (r *Router) PodOf(ctx context.Context, shopID int64, assign bool) (string, error) {
	p, err := r.route(ctx, shopID, assign)
	if err != nil {
		return "", err
	}
	return p.name, nil
}

// Placement answers where the shop lives, through the cache; ErrUnassigned
// when nowhere yet.
func (r *Router) Placement(ctx context.Context, shopID int64) (Placement, error) {
	now := r.cfg.Now()
	e, ok := r.cache.get(shopID)
	if ok && (now.Sub(e.at) < r.cfg.CacheTTL || r.following(now)) {
		r.stats.hits.Add(1)
		return e.pl, nil
	}
	r.stats.misses.Add(1)
	pl, err := r.m.Lookup(ctx, shopID)
	switch {
	case err == nil:
		r.cache.put(pl, now)
		return pl, nil
	case errors.Is(err, ErrUnassigned):
		r.cache.drop(shopID)
		return Placement{}, err
	case ok && now.Sub(e.at) < r.cfg.StaleMax && ctx.Err() == nil:
		r.stats.stale.Add(1)
		return e.pl, nil
	}
	return Placement{}, fmt.Errorf("%w: pods: reading the shard map: %w", holdfast.ErrUnavailable, err)
}

// following reports whether the router read the map's changes recently
// (within three FollowIntervals): then every cached placement is current
// but for changes of the last few seconds, which the next read drops —
// cached placements need no TTL.
func (r *Router) following(now time.Time) bool {
	last := r.followedAt.Load()
	return last != 0 && now.UnixNano()-last < int64(3*r.cfg.FollowInterval)
}

// route answers the pod that serves shopID (not yet admitted: see
// pod.admit). assign places an unassigned
// shop first (operations that create a shop's data); without it an
// unassigned shop is answered by any pod that is up, which holds nothing of
// it (not found, empty pages) — the truthful answer for a shop no pod has.
// A shop id that is not positive is routed the same way, unassigned, so
// the engine answers its ArgumentError.
func (r *Router) route(ctx context.Context, shopID int64, assign bool) (*pod, error) {
	if shopID <= 0 {
		return r.anyUp()
	}
	pl, err := r.Placement(ctx, shopID)
	if errors.Is(err, ErrUnassigned) {
		if !assign {
			return r.anyUp()
		}
		pl, err = r.assign(ctx, shopID)
	}
	if err != nil {
		return nil, err
	}
	p := r.pods[pl.Pod]
	if p == nil {
		return nil, &PodError{Pod: pl.Pod, Err: fmt.Errorf("%w: %w: the map places the shop on a pod this router is not configured with", holdfast.ErrUnavailable, ErrUnknownPod)}
	}
	return p, nil
}

// anyUp is the first pod by name that is up.
func (r *Router) anyUp() (*pod, error) {
	for _, p := range r.order {
		if !p.down.Load() {
			return p, nil
		}
	}
	return nil, &PodError{Pod: "*", Err: fmt.Errorf("%w: every pod is down", holdfast.ErrUnavailable)}
}

// assign places a new shop by the policy (Config.DefaultPod, else least
// loaded) and answers the placement that won.
func (r *Router) assign(ctx context.Context, shopID int64) (Placement, error) {
	target := r.cfg.DefaultPod
	if target == "" {
		infos, err := r.m.Pods(ctx)
		if err != nil {
			return Placement{}, fmt.Errorf("%w: pods: reading the pods' loads: %w", holdfast.ErrUnavailable, err)
		}
		best := -1
		for i, in := range infos { // by name: ties go to the first
			p := r.pods[in.Name]
			if p == nil || !in.AcceptsNew || p.down.Load() {
				continue
			}
			if best < 0 || in.Shops < infos[best].Shops {
				best = i
			}
		}
		if best < 0 {
			return Placement{}, &PodError{Pod: "*", Err: fmt.Errorf("%w: no pod that accepts new shops is up", holdfast.ErrUnavailable)}
		}
		target = infos[best].Name
	}
	pl, err := r.m.Assign(ctx, shopID, target)
	if err != nil {
		return Placement{}, fmt.Errorf("%w: pods: assigning shop %d to pod %s: %w", holdfast.ErrUnavailable, shopID, target, err)
	}
	r.cache.put(pl, r.cfg.Now())
	r.cfg.Logger.Info("pods: new shop placed", "shop", shopID, "pod", pl.Pod)
	return pl, nil
}

// observe records a call's outcome on its pod and starts the probe when the
// call marked the pod down.
func (r *Router) observe(p *pod, err error) {
	if p.observe(err, r.cfg.FailuresToDown) {
		r.cfg.Logger.Warn("pods: pod marked down; its shops are answered unavailable until a probe succeeds", "pod", p.name, "err", err)
		r.startProbe(p)
	}
}

// startProbe probes a pod that is down every ProbeInterval until a probe
// succeeds (then the pod is up) or the router stops.
func (r *Router) startProbe(p *pod) {
	if !p.probing.CompareAndSwap(false, true) {
		return
	}
	r.probes.Add(1)
	go func() {
		defer r.probes.Done()
		defer p.probing.Store(false)
		t := time.NewTicker(r.cfg.ProbeInterval)
		defer t.Stop()
		for {
			select {
			case <-r.probeCtx.Done():
				return
			case <-t.C:
			}
			if err := r.probe(p); err == nil {
				p.up()
				r.cfg.Logger.Info("pods: pod is up again", "pod", p.name)
				return
			}
		}
	}()
}

func (r *Router) probe(p *pod) error {
	ctx, cancel := context.WithTimeout(r.probeCtx, r.cfg.ProbeTimeout)
	defer cancel()
	if p.ping != nil {
		return p.ping(ctx)
	}
	_, err := p.eng.LocationOrder(ctx, 1)
	if failure(err) {
		return err
	}
	return nil
}

// Start starts every pod's engine (their maintenance workers). It does not
// block.
func (r *Router) Start(ctx context.Context) {
	for _, p := range r.order {
		p.eng.Start(ctx)
	}
}

// Stop stops the probes and every pod's engine; idempotent, bounded by ctx.
func (r *Router) Stop(ctx context.Context) error {
	r.probeCancel()
	done := make(chan struct{})
	go func() { r.probes.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	var errs []error
	for _, p := range r.order {
		if err := p.eng.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", p.name, err))
		}
	}
	return errors.Join(errs...)
}
