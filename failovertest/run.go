package failovertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Prober is implemented by a Cluster that can write one row through a plain
// client of its engine (no holdfast) over the same connection string: the
// baseline unavailability the runner compares holdfast's with. Optional.
type Prober interface {
	// Probe writes one row and returns nil once the server acknowledged
	// it; it is bounded by ctx.
	Probe(ctx context.Context) error
}

// Service is holdfast serving the cluster's database over HTTP.
type Service struct {
	// URL is the base URL (http://127.0.0.1:port).
	URL string
	// Key is a bearer key of shop Shop with the storefront and inventory
	// scopes.
	Key  string
	Shop int64
	// Invariant checks the engine's invariant over the whole database
	// (buffered plus held units within available on every key, every
	// acknowledged unexpired hold claimable); nil skips it.
	Invariant func(ctx context.Context) error
}

// Options configures Run.
type Options struct {
	Cluster Cluster
	Service Service
	// Kinds defaults to HOLDFAST_FAILOVER_KINDS (comma-separated), else
	// Cluster.Kinds().
	Kinds []Kind
	// Rounds is how many failovers of each kind, one after another.
	// Defaults to 1, or 20 with HOLDFAST_FAILOVER_FULL=1, or
	// HOLDFAST_FAILOVER_ROUNDS.
	Rounds int
	// Clients is how many concurrent clients. Defaults to 6.
	Clients int
	// Items is how many spread items besides the hot one (item 1).
	// Defaults to 20.
	Items int
	// Waiters is how many clients use the waitlist, each on its own
	// scarce item (after the spread ones): a holder takes all its units,
	// two checkouts wait for them (wait_seconds) and are granted when the
	// holder is released or expires, or are cancelled. Defaults to 2.
	Waiters int
	// Log receives progress lines; nil is t.Logf.
	Log func(format string, args ...any)
	// NotReadyAfter is how long a gap must last before /readyz is
	// required to have answered 503 in it. Defaults to 1 s. A cluster
	// whose writer stays reachable while it reconfigures (Galera blocks
	// commits during a view change, its status still Synced and Primary)
	// sets it above that pause.
	NotReadyAfter time.Duration
}

// Result is one failover's measurements.
type Result struct {
	Kind Kind
	// Unavailable is the longest stretch, after the fault, with no
	// reservation acknowledged through holdfast.
	Unavailable time.Duration
	// Probe is the same for the plain client (0 without a Prober).
	Probe time.Duration
	// Before is acknowledged reservations per second in the 5 s before
	// the fault; Recovered how long after the gap ended the rate first
	// reached 0.8×Before over 2 s (-1: not within 10 s).
	Before    float64
	Recovered time.Duration
	// Lost counts acknowledged operations lost (violations of Check).
	Lost int
}

// Full reports whether the long form is asked for (HOLDFAST_FAILOVER_FULL=1).
func Full() bool { return os.Getenv("HOLDFAST_FAILOVER_FULL") == "1" }

const (
	hotItem    = 1
	stockEach  = 1_000_000 // no item runs short: every insufficient_stock is false
	holdTTL    = 60        // seconds, for holds the clients claim or release
	expireTTL  = 1         // seconds, for holds left to expire
	location   = 1
	answerWait = 10 * time.Second // the clients' HTTP timeout
	waitStock  = 2                // units of each waitlist item
	waitFor    = 60               // wait_seconds of a waiting checkout
)

// Run loses the cluster's primary Rounds times for each kind while
// Clients clients reserve (on one hot item and spread items), claim,
// release, let holds expire and change stock, and Waiters clients wait
// for scarce items (the waitlist), through the service, and
// checks after each failover that nothing acknowledged was lost and every
// answer was true (Check), and the engine's invariant. It returns the
// measurements and prints a table.
func Run(t *testing.T, o Options) []Result {
	t.Helper()
	if o.Kinds == nil {
		o.Kinds = o.Cluster.Kinds()
		if ks := os.Getenv("HOLDFAST_FAILOVER_KINDS"); ks != "" {
			o.Kinds = nil
			for _, k := range strings.Split(ks, ",") {
				o.Kinds = append(o.Kinds, Kind(strings.TrimSpace(k)))
			}
		}
	}
	if o.Rounds == 0 {
		o.Rounds = 1
		if Full() {
			o.Rounds = 20
		}
		if n, err := strconv.Atoi(os.Getenv("HOLDFAST_FAILOVER_ROUNDS")); err == nil && n > 0 {
			o.Rounds = n
		}
	}
	if o.NotReadyAfter == 0 {
		o.NotReadyAfter = time.Second
	}
	if o.Clients == 0 {
		o.Clients = 6
	}
	if o.Items == 0 {
		o.Items = 20
	}
	if o.Waiters == 0 {
		o.Waiters = 2
	}
	logf := o.Log
	if logf == nil {
		logf = t.Logf
	}
	ctx := context.Background()
	r := &runner{o: o, hc: &http.Client{Timeout: answerWait}, h: &History{}, initial: map[int64]int{}, checkouts: map[string]bool{}}
	for it := int64(1); it <= int64(1+o.Items); it++ {
		if err := r.setStock(ctx, it, stockEach); err != nil {
			t.Fatalf("failovertest: set stock of item %d: %v", it, err)
		}
		r.initial[it] = stockEach
	}
	for k := range o.Waiters + 1 { // and the pinned wait's item
		it := r.waitItem(k)
		if err := r.setStock(ctx, it, waitStock); err != nil {
			t.Fatalf("failovertest: set stock of item %d: %v", it, err)
		}
		r.initial[it] = waitStock
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range o.Clients {
		wg.Add(1)
		go func() { defer wg.Done(); r.client(wctx, i) }()
	}
	for k := range o.Waiters {
		wg.Add(1)
		go func() { defer wg.Done(); r.waiter(wctx, k) }()
	}
	var probes []time.Time
	var pmu sync.Mutex
	if p, ok := o.Cluster.(Prober); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				pctx, cancel := context.WithTimeout(wctx, 3*time.Second)
				err := p.Probe(pctx)
				cancel()
				if err == nil {
					pmu.Lock()
					probes = append(probes, time.Now())
					pmu.Unlock()
				} else {
					time.Sleep(20 * time.Millisecond) // a refused connection returns at once
				}
			}
		}()
	}
	// /readyz, polled: it must say not ready during the gap (no primary
	// reachable) and ready again after it.
	var ready []readyAt
	var rmu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for wctx.Err() == nil {
			st := r.readyz(wctx)
			rmu.Lock()
			ready = append(ready, readyAt{time.Now(), st})
			rmu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	defer func() { stop(); wg.Wait() }()

	var results []Result
	for _, k := range o.Kinds {
		for round := range o.Rounds {
			r.waitSteady(t, 5*time.Second)
			// A wait acknowledged before the fault, read through it (every
			// answer checked by Check) and granted after it.
			pin, err := r.pinWait(ctx)
			if err != nil {
				t.Fatalf("failovertest: %s round %d: %v", k, round+1, err)
			}
			pctx, unpin := context.WithCancel(ctx)
			pinRead := make(chan struct{})
			var tally [3]int
			go func() { defer close(pinRead); r.readWait(pctx, pin, &tally) }()
			at, err := o.Cluster.Inject(ctx, k)
			if err != nil {
				t.Fatalf("failovertest: %s round %d: inject: %v", k, round+1, err)
			}
			// Recovered: a reservation acknowledged after the fault, and
			// 12 s more for the throughput's recovery.
			firstAck := r.waitAck(t, at)
			time.Sleep(time.Until(firstAck.Add(14 * time.Second)))
			if err := o.Cluster.Heal(ctx); err != nil {
				t.Fatalf("failovertest: %s round %d: heal: %v", k, round+1, err)
			}
			unpin()
			<-pinRead
			logf("failover %s #%d: the wait acknowledged before the fault read %d times through it: %d waiting, %d not definite (503, outcome unknown, no answer), %d other",
				k, round+1, tally[0]+tally[1]+tally[2], tally[0], tally[1], tally[2])
			if err := r.grantWait(ctx, pin); err != nil {
				t.Errorf("failovertest: %s round %d: the wait acknowledged before the fault: %v", k, round+1, err)
			}

			res := Result{Kind: k}
			acks := r.acks()
			pmu.Lock()
			if len(probes) > 0 {
				res.Probe = gap(probes, at)
			}
			pmu.Unlock()
			var end time.Time
			res.Unavailable, end = gapEnd(acks, at)
			res.Before = rate(acks, at.Add(-5*time.Second), at)
			res.Recovered = recovery(acks, end, res.Before)
			if o.Service.Invariant != nil {
				if err := o.Service.Invariant(ctx); err != nil {
					t.Errorf("failovertest: %s round %d: invariant: %v", k, round+1, err)
				}
			}
			rmu.Lock()
			notReady, readyAfter := false, false
			for _, a := range ready {
				if a.at.After(at) && a.at.Before(end) && a.status == http.StatusServiceUnavailable {
					notReady = true
				}
				if a.at.After(end) && a.status == http.StatusOK {
					readyAfter = true
				}
			}
			rmu.Unlock()
			if res.Unavailable > o.NotReadyAfter && !notReady {
				t.Errorf("failovertest: %s round %d: /readyz never answered 503 during the %.1fs with no primary", k, round+1, res.Unavailable.Seconds())
			}
			if !readyAfter {
				t.Errorf("failovertest: %s round %d: /readyz never answered 200 after the failover", k, round+1)
			}
			back := fmt.Sprintf("%.1fs", res.Recovered.Seconds())
			if res.Recovered < 0 {
				back = "not within 10s"
			}
			logf("failover %s #%d: unavailable %.1fs (probe %.1fs), throughput before %.0f/s, back to 0.8x after %s",
				k, round+1, res.Unavailable.Seconds(), res.Probe.Seconds(), res.Before, back)
			results = append(results, res)
		}
	}
	stop()
	wg.Wait()
	// Every operation is resolved (the clients retried each unknown
	// outcome until it was definite); read the final state and check.
	bad := r.check(t, ctx)
	r.mu.Lock()
	logf("waitlist: %d waits acknowledged, %d read granted, %d read ended (410 wait_*)", r.waits, r.granted, r.ended)
	if o.Waiters > 0 && (r.waits == 0 || r.granted == 0) {
		t.Errorf("failovertest: the waitlist clients had %d waits acknowledged and %d granted: the waitlist was not exercised", r.waits, r.granted)
	}
	r.mu.Unlock()
	for _, b := range bad {
		t.Errorf("failovertest: %s", b)
	}
	if len(results) > 0 {
		results[len(results)-1].Lost = len(bad)
	}
	if o.Service.Invariant != nil {
		if err := o.Service.Invariant(ctx); err != nil {
			t.Errorf("failovertest: invariant: %v", err)
		}
	}
	t.Log("\n" + Table(o.Cluster.Engine(), results, len(bad)))
	return results
}

// Table is the results as a markdown table: per kind, count, lost, and
// unavailability p50/max for holdfast and the plain probe, and the
// throughput's recovery.
func Table(engine string, results []Result, lost int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| engine | kind | failovers | acknowledged lost | holdfast unavailable p50 / max | plain probe p50 / max | holdfast − probe max | back to ≥0.8× throughput, max |\n|---|---|---|---|---|---|---|---|\n")
	byKind := map[Kind][]Result{}
	var kinds []Kind
	for _, r := range results {
		if byKind[r.Kind] == nil {
			kinds = append(kinds, r.Kind)
		}
		byKind[r.Kind] = append(byKind[r.Kind], r)
	}
	for _, k := range kinds {
		rs := byKind[k]
		var u, p, d []time.Duration
		var rec time.Duration
		for _, r := range rs {
			u, p, d = append(u, r.Unavailable), append(p, r.Probe), append(d, r.Unavailable-r.Probe)
			if r.Recovered < 0 || rec < 0 {
				rec = -1
			} else {
				rec = max(rec, r.Recovered)
			}
		}
		recS := fmt.Sprintf("%.1f s", rec.Seconds())
		if rec < 0 {
			recS = "not within 10 s"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f / %.1f s | %.1f / %.1f s | %.1f s | %s |\n", engine, k, len(rs), lost,
			p50(u).Seconds(), maxOf(u).Seconds(), p50(p).Seconds(), maxOf(p).Seconds(), maxOf(d).Seconds(), recS)
	}
	return b.String()
}

func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// gap is the longest stretch after at with no acknowledgement in ts
// (sorted): for each pair of consecutive acknowledgements ending after at,
// the time from max(first, at) to the second.
func gap(ts []time.Time, at time.Time) time.Duration {
	g, _ := gapEnd(ts, at)
	return g
}

// gapEnd is gap and the acknowledgement that ended it.
func gapEnd(ts []time.Time, at time.Time) (time.Duration, time.Time) {
	var g time.Duration
	end := at
	prev := at
	for _, t := range ts {
		if !t.After(at) {
			continue
		}
		if t.Sub(prev) > g {
			g, end = t.Sub(prev), t
		}
		prev = t
		if t.Sub(at) > 60*time.Second {
			break
		}
	}
	return g, end
}

func rate(ts []time.Time, from, to time.Time) float64 {
	n := 0
	for _, t := range ts {
		if t.After(from) && !t.After(to) {
			n++
		}
	}
	return float64(n) / to.Sub(from).Seconds()
}

// recovery is how long after from the rate over 2 s first reached 0.8×
// before, stepping 100 ms; -1 when not within 10 s.
func recovery(ts []time.Time, from time.Time, before float64) time.Duration {
	for d := time.Duration(0); d <= 10*time.Second; d += 100 * time.Millisecond {
		if rate(ts, from.Add(d), from.Add(d+2*time.Second)) >= 0.8*before {
			return d
		}
	}
	return -1
}

type readyAt struct {
	at     time.Time
	status int
}

func (r *runner) readyz(ctx context.Context) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.o.Service.URL+"/readyz", nil)
	res, err := r.hc.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

type runner struct {
	o       Options
	hc      *http.Client
	h       *History
	initial map[int64]int

	mu        sync.Mutex
	ackTimes  []time.Time // acknowledged new reservations (201)
	checkouts map[string]bool
	// the waitlist clients' tallies: waits acknowledged (202), granted
	// (read as held), ended with a 410 wait_*
	waits, granted, ended int
}

func (r *runner) acks() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := append([]time.Time(nil), r.ackTimes...)
	sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
	return s
}

func (r *runner) waitSteady(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		now := time.Now()
		if rate(r.acks(), now.Add(-d), now) > 0 && gap(r.acks(), now.Add(-d)) < time.Second {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("failovertest: the service acknowledged no steady reservations for 2 minutes")
}

func (r *runner) waitAck(t *testing.T, at time.Time) time.Time {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		for _, a := range r.acks() {
			if a.After(at) {
				// the gap may end later than this first ack (a switchover
				// lets the old primary answer a while): wait a little.
				if time.Since(at) > 2*time.Second {
					return a
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("failovertest: no reservation acknowledged within 3 minutes of the fault")
	return time.Time{}
}

// do sends one request and records its answer.
func (r *runner) do(ctx context.Context, e Event, method, path string, body any, idem string) Event {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, r.o.Service.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+r.o.Service.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	e.At = time.Now()
	res, err := r.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Event{Status: -1}
		}
		e.Status = 0
		r.h.Add(e)
		return e
	}
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	e.Status = res.StatusCode
	var b struct {
		Status string `json:"status"`
		Error  struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &b)
	e.Hold, e.Code = b.Status, b.Error.Code
	e.At = time.Now() // the answer's time
	r.h.Add(e)
	return e
}

// resolve repeats e's request until the answer is definite (same checkout
// id, same idempotency key: a retry tells the truth), for at most 3 min.
func (r *runner) resolve(ctx context.Context, send func(context.Context) Event) Event {
	deadline := time.Now().Add(3 * time.Minute)
	bctx := context.WithoutCancel(ctx) // finish what was started after stop
	for {
		e := send(bctx)
		if e.definite() || time.Now().After(deadline) {
			return e
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *runner) path(checkout string) string {
	p := fmt.Sprintf("/v1/shops/%d/reservations", r.o.Service.Shop)
	if checkout != "" {
		p += "/" + checkout
	}
	return p
}

func (r *runner) client(ctx context.Context, i int) {
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
	for ctx.Err() == nil {
		item := int64(hotItem)
		if rng.IntN(2) == 0 {
			item = 2 + rng.Int64N(int64(r.o.Items))
		}
		if i == 0 && rng.IntN(10) == 0 {
			r.adjust(ctx, item, 1+rng.IntN(3))
			continue
		}
		action := rng.IntN(4) // 0,1 claim; 2 release; 3 expire
		ttl := holdTTL
		if action == 3 {
			ttl = expireTTL
		}
		id := newID()
		body := map[string]any{"checkout_id": id, "ttl_seconds": ttl,
			"lines": []map[string]any{{"item_id": item, "location_id": location, "quantity": 1}}}
		e := r.resolve(ctx, func(c context.Context) Event {
			e := r.do(c, Event{Op: OpReserve, Checkout: id, Item: item, Qty: 1}, http.MethodPost, r.path(""), body, "")
			if e.Status == http.StatusCreated {
				r.mu.Lock()
				r.ackTimes = append(r.ackTimes, e.At)
				r.mu.Unlock()
			}
			return e
		})
		r.mu.Lock()
		r.checkouts[id] = true
		r.mu.Unlock()
		if e.Status/100 != 2 || action == 3 {
			continue
		}
		op, verb := OpClaim, "claim"
		if action == 2 {
			op, verb = OpRelease, "release"
		}
		r.resolve(ctx, func(c context.Context) Event {
			return r.do(c, Event{Op: op, Checkout: id, Item: item}, http.MethodPost, r.path(id)+"/"+verb, nil, "")
		})
	}
}

// pinned is a wait made before a fault: its holder and its waiter.
type pinned struct {
	item           int64
	holder, waiter string
}

// reserveOn reserves qty units of item under id (with wait_seconds wait
// when not 0), resolved.
func (r *runner) reserveOn(ctx context.Context, item int64, id string, qty, ttl, wait int) Event {
	body := map[string]any{"checkout_id": id, "ttl_seconds": ttl,
		"lines": []map[string]any{{"item_id": item, "location_id": location, "quantity": qty}}}
	if wait > 0 {
		body["wait_seconds"] = wait
	}
	r.mu.Lock()
	r.checkouts[id] = true
	r.mu.Unlock()
	return r.resolve(ctx, func(c context.Context) Event {
		return r.do(c, Event{Op: OpReserve, Checkout: id, Item: item, Qty: qty}, http.MethodPost, r.path(""), body, "")
	})
}

func (r *runner) verb(ctx context.Context, op Op, item int64, id string) Event {
	return r.resolve(ctx, func(c context.Context) Event {
		return r.do(c, Event{Op: op, Checkout: id, Item: item}, http.MethodPost, r.path(id)+"/"+string(op), nil, "")
	})
}

// pinWait makes a wait on the pinned item (after the waitlist clients'):
// a holder takes every unit and a checkout waits for one. It
// fails unless the wait was acknowledged (202 waiting).
func (r *runner) pinWait(ctx context.Context) (pinned, error) {
	p := pinned{item: r.waitItem(r.o.Waiters), holder: newID(), waiter: newID()}
	// Long enough for any round (fault, recovery, heal): neither the
	// hold nor the wait may run out before grantWait.
	if e := r.reserveOn(ctx, p.item, p.holder, waitStock, 3600, 0); e.Status/100 != 2 {
		return p, fmt.Errorf("pinned wait: holder %s answered %d %s", p.holder, e.Status, e.Code)
	}
	if e := r.reserveOn(ctx, p.item, p.waiter, 1, holdTTL, 900); e.Status != http.StatusAccepted {
		return p, fmt.Errorf("pinned wait: waiter %s answered %d %s %s, want 202 waiting", p.waiter, e.Status, e.Code, e.Hold)
	}
	r.mu.Lock()
	r.waits++
	r.mu.Unlock()
	return p, nil
}

// readWait reads the pinned waiter every 200 ms until ctx ends: through
// the fault each answer must be waiting, or 503/outcome unknown (Check).
// It tallies the answers: waiting, not definite, other.
func (r *runner) readWait(ctx context.Context, p pinned, tally *[3]int) {
	for ctx.Err() == nil {
		e := r.do(ctx, Event{Op: OpGet, Checkout: p.waiter, Item: p.item, Qty: 1}, http.MethodGet, r.path(p.waiter), nil, "")
		switch {
		case e.Status == -1:
		case e.Status == http.StatusAccepted && e.Hold == "waiting":
			tally[0]++
		case !e.definite():
			tally[1]++
		default:
			tally[2]++
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// grantWait, after the failover, releases the pinned holder and reads
// the waiter until it is granted, then claims it and restocks the unit:
// the wait acknowledged before the fault was kept and its grant is
// claimable.
func (r *runner) grantWait(ctx context.Context, p pinned) error {
	if e := r.verb(ctx, OpRelease, p.item, p.holder); e.Status != http.StatusOK {
		return fmt.Errorf("release of its holder %s: %d %s", p.holder, e.Status, e.Code)
	}
	deadline := time.Now().Add(time.Duration(waitFor) * time.Second)
	var e Event
	for time.Now().Before(deadline) {
		e = r.do(ctx, Event{Op: OpGet, Checkout: p.waiter, Item: p.item, Qty: 1}, http.MethodGet, r.path(p.waiter), nil, "")
		if e.Status == http.StatusOK || e.Status == http.StatusGone || e.Status == http.StatusNotFound {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if e.Status != http.StatusOK || e.Hold != "held" {
		return fmt.Errorf("waiter %s not granted once its holder was released: %d %s %s", p.waiter, e.Status, e.Code, e.Hold)
	}
	r.mu.Lock()
	r.granted++
	r.mu.Unlock()
	if c := r.verb(ctx, OpClaim, p.item, p.waiter); c.Status != http.StatusOK {
		return fmt.Errorf("claim of its grant %s: %d %s", p.waiter, c.Status, c.Code)
	}
	r.adjust(ctx, p.item, 1)
	return nil
}

// waitItem is the scarce item of waitlist client k.
func (r *runner) waitItem(k int) int64 { return int64(2 + r.o.Items + k) }

// waiter is waitlist client k: on its scarce item (waitStock units) a
// holder takes every unit, two checkouts ask one unit each with
// wait_seconds (202 waiting), and the holder is released or left to
// expire, or a waiter is cancelled (released while it waits). Each waiter
// is then read until its wait ends: granted (held — then it is claimed or
// released), or 410 wait_*. Every claim is restocked by a stock change,
// so the item stays scarce, never empty. Every answer is recorded for
// Check, which requires the waits acknowledged before a failover to be
// answered truthfully across it.
func (r *runner) waiter(ctx context.Context, k int) {
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), uint64(1000+k)))
	item := r.waitItem(k)
	reserve := func(id string, qty, ttl, wait int) Event { return r.reserveOn(ctx, item, id, qty, ttl, wait) }
	release := func(id string) Event { return r.verb(ctx, OpRelease, item, id) }
	for ctx.Err() == nil {
		holder := newID()
		expire := rng.IntN(2) == 0
		ttl := holdTTL
		if expire {
			ttl = 2
		}
		h := reserve(holder, waitStock, ttl, 0)
		if h.Status/100 != 2 {
			time.Sleep(200 * time.Millisecond) // the item is not as expected (a restock unresolved): do not spin
		}
		var waiting []string
		for range 2 {
			id := newID()
			if e := reserve(id, 1, holdTTL, waitFor); e.Status == http.StatusAccepted {
				r.mu.Lock()
				r.waits++
				r.mu.Unlock()
				waiting = append(waiting, id)
			} else if e.Status/100 == 2 && e.Hold == "held" {
				waiting = append(waiting, id) // held at once: read, then claim or release it below
			}
		}
		if len(waiting) > 0 && rng.IntN(4) == 0 {
			release(waiting[0]) // cancels its wait (410 wait_cancelled), or releases its hold
			waiting = waiting[1:]
		}
		if h.Status/100 == 2 && !expire {
			release(holder)
		}
		claimed := 0
		for _, id := range waiting {
			deadline := time.Now().Add(time.Duration(waitFor+30) * time.Second)
			var e Event
			for ctx.Err() == nil && time.Now().Before(deadline) {
				e = r.do(ctx, Event{Op: OpGet, Checkout: id, Item: item, Qty: 1}, http.MethodGet, r.path(id), nil, "")
				if e.Status == http.StatusOK || e.Status == http.StatusGone || e.Status == http.StatusNotFound {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			r.mu.Lock()
			switch {
			case e.Status == http.StatusGone:
				r.ended++
			case e.Status == http.StatusOK && e.Hold == "held":
				r.granted++
			}
			r.mu.Unlock()
			if e.Status != http.StatusOK || e.Hold != "held" {
				continue
			}
			if rng.IntN(2) == 0 {
				release(id)
				continue
			}
			if c := r.verb(ctx, OpClaim, item, id); c.Status == http.StatusOK {
				claimed++
			}
		}
		if claimed > 0 {
			r.adjust(ctx, item, claimed)
		}
	}
}

func (r *runner) adjust(ctx context.Context, item int64, delta int) {
	key := newID()
	path := fmt.Sprintf("/v1/shops/%d/inventory/%d/%d/adjust", r.o.Service.Shop, item, location)
	r.resolve(ctx, func(c context.Context) Event {
		return r.do(c, Event{Op: OpAdjust, Checkout: key, Item: item, Qty: delta}, http.MethodPost, path, map[string]any{"delta": delta, "reason": "failover test", "adjustment_id": key}, key)
	})
}

func (r *runner) setStock(ctx context.Context, item int64, n int) error {
	path := fmt.Sprintf("/v1/shops/%d/inventory/%d/%d", r.o.Service.Shop, item, location)
	e := r.resolve(ctx, func(c context.Context) Event {
		return r.do(c, Event{Op: "set", Item: item}, http.MethodPut, path, map[string]any{"available": n, "reason": "failover test"}, newID())
	})
	if e.Status != http.StatusOK {
		return fmt.Errorf("%d %s", e.Status, e.Code)
	}
	return nil
}

// check reads every checkout's and item's final state and checks the
// history against it.
func (r *runner) check(t *testing.T, ctx context.Context) []string {
	f := Final{Holds: map[string]string{}, Available: map[int64]int{}, Initial: r.initial, Short: map[int64]bool{}}
	for k := range r.o.Waiters + 1 {
		f.Short[r.waitItem(k)] = true // scarce on purpose
	}
	r.mu.Lock()
	ids := make([]string, 0, len(r.checkouts))
	for id := range r.checkouts {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.o.Service.URL+r.path(id), nil)
		req.Header.Set("Authorization", "Bearer "+r.o.Service.Key)
		res, err := r.hc.Do(req)
		if err != nil {
			t.Fatalf("failovertest: final GET %s: %v", id, err)
		}
		var b struct {
			Status string `json:"status"`
			Error  struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&b)
		res.Body.Close()
		switch {
		case res.StatusCode == http.StatusOK, res.StatusCode == http.StatusAccepted:
			f.Holds[id] = b.Status // a hold's status, or "waiting"
		case res.StatusCode == http.StatusNotFound:
			f.Holds[id] = ""
		case res.StatusCode == http.StatusGone && strings.HasPrefix(b.Error.Code, "wait_"):
			f.Holds[id] = b.Error.Code // the wait ended with nothing held
		default:
			t.Fatalf("failovertest: final GET %s: %s", id, res.Status)
		}
	}
	for it := range r.initial {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/shops/%d/inventory/%d/%d", r.o.Service.URL, r.o.Service.Shop, it, location), nil)
		req.Header.Set("Authorization", "Bearer "+r.o.Service.Key)
		res, err := r.hc.Do(req)
		if err != nil {
			t.Fatalf("failovertest: final stock of %d: %v", it, err)
		}
		var l struct {
			Available int `json:"available"`
		}
		_ = json.NewDecoder(res.Body).Decode(&l)
		res.Body.Close()
		f.Available[it] = l.Available
	}
	return Check(r.h.Events(), f)
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Slack is extra time a bound allows on a loaded machine: 0, or
// HOLDFAST_FAILOVER_SLACK (a Go duration).
func Slack() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("HOLDFAST_FAILOVER_SLACK"))
	return d
}
