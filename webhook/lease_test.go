package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/webhook"
)

// sequence numbers the backend's committed events, as the deliverer does
// before it leases.
func (b backend) sequence(t *testing.T) {
	t.Helper()
	sq, ok := b.eng.(interface {
		SequenceEvents(ctx context.Context) (int, error)
	})
	if !ok {
		t.Fatalf("%T sequences no events", b.eng)
	}
	if _, err := sq.SequenceEvents(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// holdCheck is a Store that checks, over every Lease the deliverer makes,
// that an endpoint is leased to one worker at a time (leased again only
// after the worker holding it gave it back), and holds the first dead
// letter back until the deliverer has leased three more times (so a
// second worker had every chance to take the endpoint in between).
type holdCheck struct {
	webhook.Store
	mu      sync.Mutex
	held    map[int64]bool
	twice   []string // the violations
	leases  int      // Lease calls
	waiting chan int // the first DeadLetter: the Lease count to reach
	once    sync.Once
}

func (h *holdCheck) Lease(ctx context.Context, leaseFor time.Duration, n int) ([]webhook.Leased, error) {
	out, err := h.Store.Lease(ctx, leaseFor, n)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leases++
	for _, l := range out {
		if h.held[l.ID] {
			h.twice = append(h.twice, "endpoint "+strconv.FormatInt(l.ID, 10)+" leased while a worker held it, at attempts "+strconv.Itoa(l.Attempts))
		}
		h.held[l.ID] = true
	}
	return out, err
}

func (h *holdCheck) Unlease(ctx context.Context, shop, id, token int64) error {
	h.mu.Lock()
	delete(h.held, id)
	h.mu.Unlock()
	return h.Store.Unlease(ctx, shop, id, token)
}

func (h *holdCheck) DeadLetter(ctx context.Context, id, shop, token, cursor int64, event []byte, attempts int, msg string) error {
	h.once.Do(func() {
		h.mu.Lock()
		target := h.leases + 3
		h.mu.Unlock()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			h.mu.Lock()
			n := h.leases
			h.mu.Unlock()
			if n >= target {
				break
			}
			time.Sleep(time.Millisecond) // polling the deliverer's progress, not timing it
		}
	})
	return h.Store.DeadLetter(ctx, id, shop, token, cursor, event, attempts, msg)
}

// TestLeaseHeldUntilDone (the TestHorizonPerEvent/mariadb flake, made
// deterministic): a worker whose attempt failed keeps the endpoint until it
// gave the lease back — while it records the dead letter no other worker
// leases the endpoint and sends the event again — and the dead letter
// carries the attempts of its event alone. Failed used to end the lease,
// so after the backoff a second worker of the same pool took the endpoint
// while the first was still at it: the event went out twice at once and
// the two workers' attempt counts added up (12 attempts for 5 tries).
func TestLeaseHeldUntilDone(t *testing.T) {
	t.Parallel()
	engines(t, testLeaseHeldUntilDone)
}

func testLeaseHeldUntilDone(t *testing.T, engine string) {
	b := newBackend(t, engine, 10)
	ctx := context.Background()
	var mu sync.Mutex
	tries := map[int64]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur, _ := strconv.ParseInt(r.Header.Get(webhook.CursorHeader), 10, 64)
		mu.Lock()
		tries[cur]++
		mu.Unlock()
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	ep, err := b.reg.Add(ctx, 1, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 1
	b.change(t, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, Set: &n, Reason: "stock"})
	h := &holdCheck{Store: b.store, held: map[int64]bool{}}
	cfg := b.config(webhook.Config{Workers: 2, Timeout: time.Second,
		BackoffMin: time.Millisecond, BackoffMax: time.Millisecond, Poll: 5 * time.Millisecond, Horizon: time.Millisecond})
	cfg.Store = h
	d, err := webhook.NewDeliverer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.Start(ctx)
	defer d.Stop(ctx) //nolint:errcheck
	var dead []webhook.DeadLetter
	for deadline := time.Now().Add(60 * time.Second); ; {
		if dead, err = b.reg.DeadLetters(ctx, 1, 10); err != nil {
			t.Fatal(err)
		}
		if len(dead) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no dead letter after a minute")
		}
		time.Sleep(5 * time.Millisecond) // polling the condition, not timing it
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if len(h.twice) > 0 {
		t.Errorf("one worker at a time per endpoint: %v", h.twice)
	}
	if len(dead) != 1 || dead[0].EndpointID != ep.ID || dead[0].Attempts < 1 || dead[0].Attempts > tries[dead[0].Cursor] {
		t.Fatalf("dead letters %+v, tries %v: want one with its event's attempts (≥ 1, ≤ its tries)", dead, tries)
	}
}

// TestStaleLeaseFenced: a worker whose lease ran out (a pause, a slow
// receiver under load) and was taken by another is fenced off by the lease
// token: its Failed, Delivered, DeadLetter and Unlease change nothing and
// answer webhook.ErrLeaseLost, so the attempts of the two workers never add
// up, the endpoint never moves past an event on the stale worker's word,
// and the second worker keeps its lease. Driven through the store, on
// both engines.
func TestStaleLeaseFenced(t *testing.T) {
	t.Parallel()
	engines(t, testStaleLeaseFenced)
}

func testStaleLeaseFenced(t *testing.T, engine string) {
	b := newBackend(t, engine, 10)
	ctx := context.Background()
	ep, err := b.reg.Add(ctx, 1, "https://example.com/hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	for i := 1; i <= 3; i++ {
		n := i
		b.change(t, holdfast.StockChange{Key: k, Set: &n, Reason: "stock"})
	}
	b.sequence(t)
	st := b.store
	first, err := st.Lease(ctx, time.Millisecond, 10)
	if err != nil || len(first) != 1 || first[0].ID != ep.ID {
		t.Fatalf("first lease: %+v, %v", first, err)
	}
	a := first[0]
	// The first lease runs out; a second worker takes the endpoint.
	var second []webhook.Leased
	for deadline := time.Now().Add(30 * time.Second); len(second) == 0; {
		if second, err = st.Lease(ctx, time.Minute, 10); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the 1 ms lease never ran out")
		}
	}
	bw := second[0]
	if bw.ID != ep.ID || bw.Token == a.Token {
		t.Fatalf("second lease %+v after %+v: want the endpoint with a fresh token", bw, a)
	}
	// The second worker fails its first attempt.
	if _, err := st.Failed(ctx, bw.Shop, bw.ID, bw.Token, 1, "answered 500", time.Hour, time.Hour); err != nil {
		t.Fatal(err)
	}
	state := func() webhook.Endpoint {
		t.Helper()
		eps, err := b.reg.List(ctx, 1)
		if err != nil || len(eps) != 1 {
			t.Fatalf("endpoints %+v, %v", eps, err)
		}
		return eps[0]
	}
	before := state()
	// The stale worker's writes, each refused.
	if _, err := st.Failed(ctx, a.Shop, a.ID, a.Token, 7, "stale", 0, 0); !errors.Is(err, webhook.ErrLeaseLost) {
		t.Errorf("stale Failed: %v, want ErrLeaseLost", err)
	}
	if err := st.Delivered(ctx, a.Shop, a.ID, a.Token, a.Cursor+1); !errors.Is(err, webhook.ErrLeaseLost) {
		t.Errorf("stale Delivered: %v, want ErrLeaseLost", err)
	}
	if err := st.DeadLetter(ctx, a.ID, a.Shop, a.Token, a.Cursor+1, []byte(`{}`), 7, "stale"); !errors.Is(err, webhook.ErrLeaseLost) {
		t.Errorf("stale DeadLetter: %v, want ErrLeaseLost", err)
	}
	if err := st.Unlease(ctx, a.Shop, a.ID, a.Token); !errors.Is(err, webhook.ErrLeaseLost) {
		t.Errorf("stale Unlease: %v, want ErrLeaseLost", err)
	}
	after := state()
	if after.Cursor != before.Cursor || after.Attempts != 1 || after.LastError != "answered 500" || after.DeadLetters != 0 {
		t.Errorf("endpoint after the stale worker's writes %+v, before %+v: want it unchanged (attempts 1, no dead letter)", after, before)
	}
	// The second worker still holds its lease: a third finds nothing to
	// lease (the backoff aside: make it due now).
	if _, err := st.Failed(ctx, bw.Shop, bw.ID, bw.Token, 1, "answered 500", 0, time.Hour); err != nil {
		t.Fatal(err)
	}
	if third, err := st.Lease(ctx, time.Minute, 10); err != nil || len(third) != 0 {
		t.Errorf("lease while the second worker holds the endpoint: %+v, %v; want none", third, err)
	}
	// Its own writes take effect.
	if err := st.Delivered(ctx, bw.Shop, bw.ID, bw.Token, bw.Cursor+1); err != nil {
		t.Fatal(err)
	}
	if err := st.Unlease(ctx, bw.Shop, bw.ID, bw.Token); err != nil {
		t.Fatal(err)
	}
	if got := state(); got.Cursor != bw.Cursor+1 || got.Attempts != 0 {
		t.Errorf("endpoint after the second worker's delivery %+v: want cursor %d, attempts 0", got, bw.Cursor+1)
	}
}
