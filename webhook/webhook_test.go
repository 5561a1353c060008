package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/holdfast/holdfast/webhook"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(mysqltest.Runner(m))) }

func TestSignVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"cursor":1}`)
	now := time.Unix(1_800_000_000, 0)
	h := webhook.Sign("whsec_x", now, body)
	if err := webhook.Verify("whsec_x", h, body, now.Add(time.Minute), 0); err != nil {
		t.Fatalf("a fresh signature: %v", err)
	}
	for _, tc := range []struct {
		name, secret, header string
		body                 []byte
		now                  time.Time
		want                 error
	}{
		{"tampered body", "whsec_x", h, []byte(`{"cursor":2}`), now, webhook.ErrBadSignature},
		{"other secret", "whsec_y", h, body, now, webhook.ErrBadSignature},
		{"replayed later", "whsec_x", h, body, now.Add(10 * time.Minute), webhook.ErrStale},
		{"no header", "whsec_x", "", body, now, webhook.ErrNoSignature},
		{"garbage", "whsec_x", "t=abc,v1=zz", body, now, webhook.ErrNoSignature},
	} {
		if err := webhook.Verify(tc.secret, tc.header, tc.body, tc.now, 0); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestRegistryBadInput: every bad registration is an *ArgumentError naming
// the field and writes nothing; the per-shop bound and unknown ids have
// their own answers.
func TestRegistryBadInput(t *testing.T) { t.Parallel(); engines(t, testRegistryBadInput) }

func testRegistryBadInput(t *testing.T, engine string) {
	b := newBackend(t, engine, 4)
	ctx := context.Background()
	r := b.reg
	neg := int64(-1)
	for _, tc := range []struct {
		shop  int64
		url   string
		after *int64
		field string
	}{
		{1, "", nil, "url"},
		{1, "ftp://example.com/hook", nil, "url"},
		{1, "file:///etc/passwd", nil, "url"},
		{1, "http://", nil, "url"},
		{1, "/relative", nil, "url"},
		{1, "https://user:pw@example.com/hook", nil, "url"},
		{1, "https://example.com/hook#frag", nil, "url"},
		{1, "https://example.com/" + strings.Repeat("a", webhook.URLMaxLen), nil, "url"},
		{0, "https://example.com/hook", nil, "shop_id"},
		{1, "https://example.com/hook", &neg, "after"},
	} {
		_, err := r.Add(ctx, tc.shop, tc.url, tc.after)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("Add(%d, %q): %v, want an *ArgumentError for %s", tc.shop, tc.url, err, tc.field)
		}
	}
	if n := b.count(t, "webhook_endpoints"); n != 0 {
		t.Fatalf("%d endpoints after bad registrations, want 0", n)
	}
	if _, err := r.Remove(ctx, 1, 99); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("remove unknown: %v", err)
	}
	for i := 0; i < webhook.EndpointsPerShopMax; i++ {
		if _, err := r.Add(ctx, 1, "https://example.com/hook/"+strconv.Itoa(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Add(ctx, 1, "https://example.com/one-too-many", nil); !errors.Is(err, webhook.ErrTooMany) {
		t.Fatalf("endpoint %d: %v, want ErrTooMany", webhook.EndpointsPerShopMax+1, err)
	}
	eps, err := r.List(ctx, 2)
	if err != nil || len(eps) != 0 {
		t.Fatalf("another shop lists %v, %v", eps, err)
	}
	if _, err := r.Remove(ctx, 2, 1); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("another shop removes shop 1's endpoint: %v", err)
	}
}

// receiver is a local test receiver: it verifies every signature, fails
// the first attempt of every fifth event, answers one event slowly (past
// the deliverer's timeout) and is down (connections closed) while down is
// set. It records what it accepted.
type receiver struct {
	t      *testing.T
	secret string
	mu     sync.Mutex
	down   bool
	tried  map[int64]int
	got    []holdfast.Event
	at     []time.Time
	badSig int
	slow   int64
	want   int64
	done   chan struct{}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	if rc.down {
		rc.mu.Unlock()
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	if err := webhook.Verify(rc.secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), 0); err != nil {
		rc.badSig++
		rc.mu.Unlock()
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var ev holdfast.Event
	if err := json.Unmarshal(body, &ev); err != nil || strconv.FormatInt(ev.Cursor, 10) != r.Header.Get(webhook.CursorHeader) {
		rc.badSig++
		rc.mu.Unlock()
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	rc.tried[ev.Cursor]++
	first := rc.tried[ev.Cursor] == 1
	slow := ev.Cursor == rc.slow && first
	if ev.Cursor%5 == 0 && first {
		rc.mu.Unlock()
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	rc.mu.Unlock()
	if slow {
		// Slower than the deliverer's timeout: it gives up and retries.
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
		return
	}
	rc.mu.Lock()
	rc.got = append(rc.got, ev)
	rc.at = append(rc.at, time.Now())
	if ev.Cursor == rc.want && rc.done != nil {
		close(rc.done)
		rc.done = nil
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// TestDeliveryAtLeastOnceInOrder (#17): events of reservations and
// releases reach a receiver that fails, answers slowly and goes down, and
// a deliverer that restarts: every event arrives (at least once), each
// checkout's in order, every signature verifies.
func TestDeliveryAtLeastOnceInOrder(t *testing.T) {
	t.Parallel()
	engines(t, testDeliveryAtLeastOnceInOrder)
}

func testDeliveryAtLeastOnceInOrder(t *testing.T, engine string) {
	b := newBackend(t, engine, 20)
	ctx := context.Background()
	c := b.eng
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	million := 1_000_000
	b.change(t, holdfast.StockChange{Key: k, Set: &million, Reason: "stock"})
	if _, err := c.Events(ctx, 1, 0, 0); err != nil { // sequence the stock event
		t.Fatal(err)
	}
	rc := &receiver{t: t, tried: map[int64]int{}, slow: 7}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	reg := b.reg
	ep, err := reg.Add(ctx, 1, srv.URL+"/hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Cursor != 1 || !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("registered %+v: want delivery from after the feed's head (1) and a secret", ep)
	}
	rc.secret = ep.Secret
	newDeliverer := func() *webhook.Deliverer {
		d, err := webhook.NewDeliverer(b.config(webhook.Config{Workers: 2, Timeout: 300 * time.Millisecond,
			BackoffMin: 5 * time.Millisecond, BackoffMax: 40 * time.Millisecond, Poll: 20 * time.Millisecond, Horizon: time.Hour}))
		if err != nil {
			t.Fatal(err)
		}
		d.Start(ctx)
		return d
	}
	d := newDeliverer()

	checkouts, writers := 60, 4
	if testing.Short() {
		checkouts = 20
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < checkouts; i += writers {
				id := uuid.New()
				if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					_, err = c.Claim(ctx, 1, id)
				} else {
					_, err = c.Release(ctx, 1, id)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if i == checkouts/3 {
					// The receiver goes down for a while, then the
					// deliverer restarts.
					rc.mu.Lock()
					rc.down = true
					rc.mu.Unlock()
				}
				if i == checkouts/2 {
					rc.mu.Lock()
					rc.down = false
					rc.mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	rc.mu.Lock()
	rc.down = false
	rc.mu.Unlock()
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	d = newDeliverer()
	defer d.Stop(ctx) //nolint:errcheck

	all, err := c.Events(ctx, 1, 1, holdfast.EventsLimitMax)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2*checkouts {
		t.Fatalf("%d events in the feed, want %d", len(all), 2*checkouts)
	}
	last := all[len(all)-1].Cursor
	done := make(chan struct{})
	rc.mu.Lock()
	rc.want = last
	rc.done = done
	for _, ev := range rc.got {
		if ev.Cursor == last {
			close(done)
			rc.done = nil
		}
	}
	rc.mu.Unlock()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the receiver never accepted cursor %d", last)
	}
	elapsed := time.Since(start)

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.badSig > 0 {
		t.Fatalf("%d deliveries failed verification", rc.badSig)
	}
	accepted := map[int64]bool{}
	var order []int64
	var lags []time.Duration
	for i, ev := range rc.got {
		if !accepted[ev.Cursor] {
			accepted[ev.Cursor] = true
			order = append(order, ev.Cursor)
			lags = append(lags, rc.at[i].Sub(ev.At))
		}
	}
	for _, ev := range all {
		if !accepted[ev.Cursor] {
			t.Fatalf("event %d (%s) never accepted", ev.Cursor, ev.Type)
		}
	}
	if !slices.IsSorted(order) {
		t.Fatalf("first deliveries out of cursor order: %v", order)
	}
	// Per checkout: created, then claimed or released.
	seen := map[uuid.UUID]int{}
	byCursor := map[int64]holdfast.Event{}
	for _, ev := range all {
		byCursor[ev.Cursor] = ev
	}
	for _, cur := range order {
		ev := byCursor[cur]
		if ev.CheckoutID == nil {
			continue
		}
		n := seen[*ev.CheckoutID]
		if (n == 0) != (ev.Type == holdfast.EventHoldCreated) {
			t.Fatalf("checkout %s: %s as its event %d", *ev.CheckoutID, ev.Type, n+1)
		}
		seen[*ev.CheckoutID] = n + 1
	}
	if rc.tried[5] < 2 || rc.tried[rc.slow] < 2 {
		t.Fatalf("the failed (5: %d tries) and slow (%d: %d tries) events were not retried", rc.tried[5], rc.slow, rc.tried[rc.slow])
	}
	slices.Sort(lags)
	t.Logf("delivered %d events (%d requests) in %v with failures, a slow answer, an outage and a deliverer restart: %.0f events/s; lag p50 %v p99 %v",
		len(order), len(rc.got), elapsed.Round(time.Millisecond), float64(len(order))/elapsed.Seconds(),
		lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)*99/100].Round(time.Millisecond))
	// The receiver answered; the deliverer records it just after.
	for deadline := time.Now().Add(time.Minute); ; {
		eps, err := reg.List(ctx, 1)
		if err == nil && len(eps) == 1 && eps[0].Cursor == last && eps[0].DeadLetters == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint after delivery: %+v, %v (want cursor %d, no dead letters)", eps, err, last)
		}
		time.Sleep(10 * time.Millisecond) // polling the condition, not timing it
	}
}

// TestDeadLetter (#17): an endpoint that never accepts gets each event
// retried until the horizon, then dead-lettered (visible in the registry
// and counted for the doctor); delivery moves on.
func TestDeadLetter(t *testing.T) { t.Parallel(); engines(t, testDeadLetter) }

func testDeadLetter(t *testing.T, engine string) {
	b := newBackend(t, engine, 10)
	ctx := context.Background()
	var mu sync.Mutex
	tries := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries[r.Header.Get(webhook.CursorHeader)]++
		mu.Unlock()
		http.Error(w, strings.Repeat("no ", 100_000), http.StatusInternalServerError)
	}))
	defer srv.Close()
	reg := b.reg
	ep, err := reg.Add(ctx, 1, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	five := 5
	b.change(t, holdfast.StockChange{Key: k, Set: &five, Reason: "stock", Reference: "po-1"})
	b.change(t, holdfast.StockChange{Key: k, Delta: 2, Reason: "restock", Reference: "po-2"})
	d, err := webhook.NewDeliverer(b.config(webhook.Config{Timeout: time.Second,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Poll: 10 * time.Millisecond, Horizon: 100 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	d.Start(ctx)
	defer d.Stop(ctx) //nolint:errcheck
	var dead []webhook.DeadLetter
	deadline := time.Now().Add(time.Minute)
	for len(dead) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("dead letters: %+v after a minute, want 2", dead)
		}
		if dead, err = reg.DeadLetters(ctx, 1, 10); err != nil {
			t.Fatal(err)
		}
		if len(dead) < 2 {
			time.Sleep(20 * time.Millisecond) // polling the condition, not timing it
		}
	}
	if dead[0].Cursor != 2 || dead[1].Cursor != 1 || dead[0].EndpointID != ep.ID || dead[0].Attempts < 2 || dead[0].LastError != "answered 500" {
		t.Fatalf("dead letters %+v", dead)
	}
	var ev holdfast.Event
	if err := json.Unmarshal(dead[1].Event, &ev); err != nil || ev.Type != holdfast.EventStockChanged || ev.Reference != "po-1" {
		t.Fatalf("dead letter's event %s: %v", dead[1].Event, err)
	}
	if n := b.count(t, "webhook_dead_letters"); n != 2 {
		t.Fatalf("%d dead letters stored, want 2", n)
	}
	eps, err := reg.List(ctx, 1)
	if err != nil || len(eps) != 1 || eps[0].Cursor != 2 || eps[0].DeadLetters != 2 {
		t.Fatalf("endpoint %+v, %v: want cursor 2 past both dead letters", eps, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if tries["1"] < 2 || tries["2"] < 2 {
		t.Fatalf("tries %v: each event should be retried before it is dead", tries)
	}
}

// TestEndpointLimitUnderConcurrency (#24 item 7): registrations racing for
// a shop's last places never take it past EndpointsPerShopMax: the count
// is taken under a lock on the shop's registrations, on both engines.
func TestEndpointLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	engines(t, testEndpointLimitUnderConcurrency)
}

func testEndpointLimitUnderConcurrency(t *testing.T, engine string) {
	const tries = 3 * webhook.EndpointsPerShopMax
	b := newBackend(t, engine, tries)
	ctx := context.Background()
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	added, refused := 0, 0
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := b.reg.Add(ctx, 1, "https://example.com/hook/"+strconv.Itoa(i), nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				added++
			case errors.Is(err, webhook.ErrTooMany):
				refused++
			default:
				t.Errorf("add %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	n := b.count(t, "webhook_endpoints")
	if added != webhook.EndpointsPerShopMax || refused != tries-added || n != webhook.EndpointsPerShopMax {
		t.Fatalf("%d concurrent registrations: %d added, %d refused, %d stored; want %d stored", tries, added, refused, n, webhook.EndpointsPerShopMax)
	}
}

// TestMySQLRegistrationNoSequencerWait (#24 item 7): a MySQL registration
// reads the shop's feed head with a plain read, so it does not wait for a
// transaction that holds the shop's feed row (the sequencer's); as a
// subquery of the INSERT, the read took a shared lock and waited.
func TestMySQLRegistrationNoSequencerWait(t *testing.T) {
	t.Parallel()
	b := newBackend(t, engineMariaDB, 4)
	ctx := context.Background()
	n := 1
	b.change(t, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, Set: &n, Reason: "stock"})
	if _, err := b.eng.Events(ctx, 1, 0, 0); err != nil { // sequenced: the shop's row exists
		t.Fatal(err)
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var last int64
	if err := tx.QueryRowContext(ctx, "SELECT last_seq FROM holdfast_event_shops WHERE shop_id = 1 FOR UPDATE").Scan(&last); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ep, err := b.reg.Add(c, 1, "http://127.0.0.1:9/hook", nil)
	if err != nil || ep.Cursor != last {
		t.Fatalf("registration while the shop's feed row is locked: %+v, %v; want it registered at cursor %d without waiting", ep, err, last)
	}
}
