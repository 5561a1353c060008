package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/webhook"
)

// hub is one local receiver for many endpoints: it accepts every request
// and records, per endpoint (Holdfast-Webhook-Id), the cursors it got.
type hub struct {
	mu  sync.Mutex
	got map[int64]map[int64]bool
}

func newHub() *hub { return &hub{got: map[int64]map[int64]bool{}} }

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.Header.Get(webhook.EndpointHeader), 10, 64)
	cur, _ := strconv.ParseInt(r.Header.Get(webhook.CursorHeader), 10, 64)
	h.mu.Lock()
	if h.got[id] == nil {
		h.got[id] = map[int64]bool{}
	}
	h.got[id][cur] = true
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// missing lists, per endpoint, the cursors in want it has not received.
func (h *hub) missing(want map[int64][]int64) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := ""
	for id, curs := range want {
		n := 0
		for _, c := range curs {
			if !h.got[id][c] {
				n++
			}
		}
		if n > 0 {
			out += fmt.Sprintf(" endpoint %d: %d of %d missing;", id, n, len(curs))
		}
	}
	return out
}

// TestLeaseServesEveryEndpoint (#24 item 1): with more endpoints than
// workers (4 workers, 12 endpoints over 3 shops), every endpoint gets
// every event of its shop: leasing is oldest-due first over all
// endpoints, not the oldest four endpoints every tick.
func TestLeaseServesEveryEndpoint(t *testing.T) {
	t.Parallel()
	engines(t, testLeaseServesEveryEndpoint)
}

func testLeaseServesEveryEndpoint(t *testing.T, engine string) {
	b := newBackend(t, engine, 10)
	ctx := context.Background()
	h := newHub()
	srv := httptest.NewServer(h)
	defer srv.Close()
	const shops, perShop, events = 3, 4, 5
	endpoints := map[int64][]int64{} // shop -> endpoint ids
	for shop := int64(1); shop <= shops; shop++ {
		for i := 0; i < perShop; i++ {
			ep, err := b.reg.Add(ctx, shop, fmt.Sprintf("%s/shop/%d/%d", srv.URL, shop, i), nil)
			if err != nil {
				t.Fatal(err)
			}
			endpoints[shop] = append(endpoints[shop], ep.ID)
		}
	}
	d, err := webhook.NewDeliverer(b.config(webhook.Config{Workers: 4, Timeout: time.Second,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Poll: 20 * time.Millisecond, Horizon: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	d.Start(ctx)
	defer d.Stop(ctx) //nolint:errcheck
	// Events written while the deliverer runs: each a stock change.
	for shop := int64(1); shop <= shops; shop++ {
		k := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
		for i := 1; i <= events; i++ {
			n := i
			b.change(t, holdfast.StockChange{Key: k, Set: &n, Reason: "stock"})
		}
	}
	want := map[int64][]int64{} // endpoint -> cursors
	for shop, ids := range endpoints {
		evs, err := b.eng.Events(ctx, shop, 0, holdfast.EventsLimitMax)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) < events {
			t.Fatalf("shop %d: %d events, want at least %d", shop, len(evs), events)
		}
		for _, id := range ids {
			for _, ev := range evs {
				want[id] = append(want[id], ev.Cursor)
			}
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		m := h.missing(want)
		if m == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s with 4 workers and %d endpoints:%s", shops*perShop, m)
		}
		time.Sleep(20 * time.Millisecond) // polling the condition, not timing it
	}
}

// TestLeaseWaitBounded (#24 item 1): an endpoint with an event waits for a
// worker at most ceil(due/Workers) × (Slice + Timeout) + Poll, even while
// every worker is busy with slow endpoints that have a long backlog. The
// bound is checked in the deliverer's own steps, not in wall time (a loaded
// machine slows both sides alike): while the new event waits, the slow
// endpoints get at most a few requests each, one lease's slice per worker
// turn, not their whole backlog as a lease held until it runs dry would.
func TestLeaseWaitBounded(t *testing.T) {
	t.Parallel()
	engines(t, testLeaseWaitBounded)
}

func testLeaseWaitBounded(t *testing.T, engine string) {
	b := newBackend(t, engine, 10)
	ctx := context.Background()
	var slowRequests atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slowRequests.Add(1)
		select { // a slow receiver (its answer time, not synchronisation)
		case <-r.Context().Done():
		case <-time.After(200 * time.Millisecond):
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer slow.Close()
	got := make(chan int64, 10) // the slow endpoints' request count when the fast one is served
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- slowRequests.Load():
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer fast.Close()
	const workers = 4
	const slice = 100 * time.Millisecond
	for i := 0; i < workers; i++ {
		if _, err := b.reg.Add(ctx, 1, fmt.Sprintf("%s/%d", slow.URL, i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.reg.Add(ctx, 2, fast.URL, nil); err != nil {
		t.Fatal(err)
	}
	k1 := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	for i := 1; i <= 30; i++ { // 30 × 200 ms = 6 s of backlog per slow endpoint
		n := i
		b.change(t, holdfast.StockChange{Key: k1, Set: &n, Reason: "stock"})
	}
	cfg := webhook.Config{Workers: workers, Timeout: time.Second, Slice: slice,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Poll: 20 * time.Millisecond, Horizon: time.Hour}
	d, err := webhook.NewDeliverer(b.config(cfg))
	if err != nil {
		t.Fatal(err)
	}
	d.Start(ctx)
	defer d.Stop(ctx) //nolint:errcheck
	// Every worker is busy with shop 1 once one of its requests arrived.
	for deadline := time.Now().Add(30 * time.Second); ; {
		eps, err := b.reg.List(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		busy := 0
		for _, ep := range eps {
			if ep.Cursor > 1 {
				busy++
			}
		}
		if busy == workers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shop 1's endpoints never all served: %+v", eps)
		}
		time.Sleep(10 * time.Millisecond) // polling the condition, not timing it
	}
	before := slowRequests.Load()
	n := 1
	b.change(t, holdfast.StockChange{Key: holdfast.Key{ShopID: 2, ItemID: 1, LocationID: 1}, Set: &n, Reason: "stock"})
	// ceil(5 due / 4 workers) = 2 turns: each slow endpoint's lease sends one
	// 200 ms request per 100 ms slice, so the new event waits behind at most
	// about 2 requests per worker; allow 3. A lease kept until its endpoint
	// ran dry would send the 4 × 30 backlog first.
	const most = 3 * workers
	select {
	case at := <-got:
		if behind := at - before; behind > most {
			t.Fatalf("shop 2's endpoint was served after %d requests to shop 1's slow endpoints, want at most %d", behind, most)
		}
	case <-time.After(time.Minute):
		t.Fatalf("shop 2's endpoint got nothing within a minute while shop 1's 4 slow endpoints hold the 4 workers (%d requests to them since)", slowRequests.Load()-before)
	}
}
