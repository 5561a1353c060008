package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/holdfast/holdfast/webhook"
)

// TestPurgeWaitsForEndpoint (#24 item 2): events an endpoint has not
// received outlive the event retention (up to EventRetentionMax); past
// the cap they are purged and the endpoint records the gap as a dead
// letter, then starts the next event with a fresh retry state; the feed
// answers a cursor before the gap with *holdfast.CursorExpiredError.
func TestPurgeWaitsForEndpoint(t *testing.T) {
	t.Parallel()
	engines(t, testPurgeWaitsForEndpoint)
}

func testPurgeWaitsForEndpoint(t *testing.T, engine string) {
	clock := pgtest.NewClock(time.Now())
	b := newBackendConfig(t, engine, 10, holdfast.Config{Now: clock.Now, EventRetention: time.Hour, EventRetentionMax: 24 * time.Hour})
	ctx := context.Background()
	var mu sync.Mutex
	tries := map[int64]int{}
	accept := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur, _ := strconv.ParseInt(r.Header.Get(webhook.CursorHeader), 10, 64)
		mu.Lock()
		defer mu.Unlock()
		tries[cur]++
		if !accept {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	triesOf := func(c int64) int { mu.Lock(); defer mu.Unlock(); return tries[c] }
	ep, err := b.reg.Add(ctx, 1, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	for i := 1; i <= 6; i++ {
		n := i
		b.change(t, holdfast.StockChange{Key: k, Set: &n, Reason: "stock"})
	}
	before, err := b.eng.Events(ctx, 1, 0, 0)
	if err != nil || len(before) < 6 {
		t.Fatalf("feed: %d events, %v", len(before), err)
	}
	last := before[len(before)-1].Cursor
	d, err := webhook.NewDeliverer(b.config(webhook.Config{Timeout: time.Second,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Poll: 20 * time.Millisecond, Horizon: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	d.Start(ctx)
	defer d.Stop(ctx) //nolint:errcheck
	poll := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); {
			if time.Now().After(deadline) {
				t.Fatalf("after 30s: %s", what)
			}
			time.Sleep(10 * time.Millisecond) // polling the condition, not timing it
		}
	}
	poll("the first event was never retried", func() bool { return triesOf(ep.Cursor+1) >= 2 })

	// Past the retention, within the cap: the endpoint has not received
	// them, so they stay.
	clock.Advance(2 * time.Hour)
	b.purge(t)
	after, err := b.eng.Events(ctx, 1, 0, 0)
	if err != nil || len(after) != len(before) {
		t.Fatalf("past the retention, with an endpoint at cursor %d: the feed has %d of %d events (%v); want every one kept for it", ep.Cursor, len(after), len(before), err)
	}
	if dead, err := b.reg.DeadLetters(ctx, 1, 10); err != nil || len(dead) != 0 {
		t.Fatalf("dead letters %+v, %v; want none yet", dead, err)
	}

	// Past the cap: purged, and the gap is a dead letter, never silent.
	clock.Advance(24 * time.Hour)
	b.purge(t)
	_, err = b.eng.Events(ctx, 1, ep.Cursor, 0)
	var ce *holdfast.CursorExpiredError
	if !errors.As(err, &ce) || !errors.Is(err, holdfast.ErrCursorExpired) || ce.After != ep.Cursor || ce.Oldest != last {
		t.Fatalf("feed after %d once its events were purged: %v; want a *CursorExpiredError with oldest cursor %d", ep.Cursor, err, last)
	}
	if evs, err := b.eng.Events(ctx, 1, ce.Oldest, 0); err != nil || len(evs) != 0 {
		t.Fatalf("feed after the oldest cursor: %+v, %v", evs, err)
	}
	var dead []webhook.DeadLetter
	poll("no dead letter for the purged events", func() bool {
		dead, err = b.reg.DeadLetters(ctx, 1, 10)
		return err == nil && len(dead) > 0
	})
	if len(dead) != 1 || dead[0].Cursor != last || dead[0].EndpointID != ep.ID || dead[0].Attempts < 2 || !strings.Contains(dead[0].LastError, "purged") {
		t.Fatalf("dead letters %+v: want one for events %d..%d, purged, with the first one's attempts", dead, ep.Cursor+1, last)
	}

	// The next event starts afresh and is delivered.
	mu.Lock()
	accept = true
	mu.Unlock()
	n := 100
	b.change(t, holdfast.StockChange{Key: k, Set: &n, Reason: "stock"})
	poll("the next event was never delivered", func() bool {
		eps, err := b.reg.List(ctx, 1)
		return err == nil && len(eps) == 1 && eps[0].Cursor == last+1
	})
	eps, _ := b.reg.List(ctx, 1)
	if eps[0].Attempts != 0 || eps[0].DeadLetters != 1 || triesOf(last+1) != 1 {
		t.Fatalf("endpoint %+v, %d tries of the next event: want it delivered at the first try, one dead letter", eps[0], triesOf(last+1))
	}
}

// TestHorizonPerEvent (#24 item 2, the reproduction): with the events past
// the feed's retention and purged while a receiver answers 500, every
// event is retried for its own horizon and becomes its own dead letter
// (none vanishes, none inherits another's attempts).
func TestHorizonPerEvent(t *testing.T) {
	t.Parallel()
	engines(t, testHorizonPerEvent)
}

func testHorizonPerEvent(t *testing.T, engine string) {
	clock := pgtest.NewClock(time.Now())
	b := newBackendConfig(t, engine, 10, holdfast.Config{Now: clock.Now, EventRetention: time.Hour})
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
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	const events = 6
	for i := 1; i <= events; i++ {
		n := i
		b.change(t, holdfast.StockChange{Key: k, Set: &n, Reason: "stock"})
	}
	evs, err := b.eng.Events(ctx, 1, ep.Cursor, 0)
	if err != nil || len(evs) != events {
		t.Fatalf("feed: %d events, %v", len(evs), err)
	}
	clock.Advance(2 * time.Hour) // every event is past the retention
	d, err := webhook.NewDeliverer(b.config(webhook.Config{Timeout: time.Second,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Poll: 10 * time.Millisecond, Horizon: 150 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	d.Start(ctx)
	defer d.Stop(ctx) //nolint:errcheck
	var dead []webhook.DeadLetter
	for deadline := time.Now().Add(60 * time.Second); ; {
		b.purge(t) // the sweeper's purge, all along
		if dead, err = b.reg.DeadLetters(ctx, 1, 100); err != nil {
			t.Fatal(err)
		}
		eps, err := b.reg.List(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if eps[0].Cursor == evs[len(evs)-1].Cursor {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint %+v after a minute, dead letters %+v", eps[0], dead)
		}
		time.Sleep(10 * time.Millisecond) // polling the condition, not timing it
	}
	// Read them again now that the cursor is at the end: the read above
	// came before the cursor's, and the last dead letter may have been
	// written (with the cursor) between the two.
	if dead, err = b.reg.DeadLetters(ctx, 1, 100); err != nil {
		t.Fatal(err)
	}
	if len(dead) != events {
		t.Fatalf("%d dead letters for %d undeliverable events: %+v", len(dead), events, dead)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, dl := range dead {
		want := evs[len(evs)-1-i].Cursor // newest first
		if dl.Cursor != want || dl.Attempts < 2 || dl.Attempts > tries[want] || dl.LastError != "answered 500" {
			t.Fatalf("dead letter %+v: want event %d with its own attempts (≥ 2, ≤ its %d tries)", dl, want, tries[want])
		}
	}
}
