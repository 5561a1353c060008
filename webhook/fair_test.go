package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
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
