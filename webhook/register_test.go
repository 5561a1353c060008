package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/webhook"
)

// TestRegistrationSkipsEarlierEvents (#24 review): an endpoint registered
// without after starts after every event committed before its
// registration, sequenced or not yet: the sequencer numbers events
// asynchronously, so the feed's head alone is older than the registration
// and the endpoint received the events before it.
func TestRegistrationSkipsEarlierEvents(t *testing.T) {
	t.Parallel()
	engines(t, testRegistrationSkipsEarlierEvents)
}

func testRegistrationSkipsEarlierEvents(t *testing.T, engine string) {
	b := newBackend(t, engine, 4)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 2, ItemID: 150, LocationID: 1}
	hundred := 100
	b.change(t, holdfast.StockChange{Key: k, Set: &hundred, Reason: "stock", Reference: "first"})
	if _, err := b.eng.Events(ctx, 2, 0, 0); err != nil { // sequenced: the head is 1
		t.Fatal(err)
	}
	// Committed, not yet sequenced (no sequencer runs in this test).
	for _, ref := range []string{"pre-1", "pre-2", "pre-3", "pre-4", "pre-5"} {
		b.change(t, holdfast.StockChange{Key: k, Delta: 1, Reason: "restock", Reference: ref})
	}
	ep, err := b.reg.Add(ctx, 2, "http://127.0.0.1:9/hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	b.change(t, holdfast.StockChange{Key: k, Delta: 1, Reason: "restock", Reference: "post"})
	evs, err := b.eng.Events(ctx, 2, ep.Cursor, holdfast.EventsLimitMax)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, ev := range evs {
		refs = append(refs, ev.Reference)
	}
	if len(evs) != 1 || evs[0].Reference != "post" {
		t.Fatalf("registered at cursor %d: the endpoint's events are %v, want only the one after its registration [post]", ep.Cursor, refs)
	}
	if eps, err := b.reg.List(ctx, 2); err != nil || len(eps) != 1 || eps[0].Cursor != ep.Cursor {
		t.Fatalf("listed %+v, %v", eps, err)
	}
}

// TestRemoveReportsDeadLetters (#24 review): removing an endpoint answers
// it as it was, with its dead letters counted (they go with it).
func TestRemoveReportsDeadLetters(t *testing.T) {
	t.Parallel()
	engines(t, testRemoveReportsDeadLetters)
}

func testRemoveReportsDeadLetters(t *testing.T, engine string) {
	b := newBackend(t, engine, 10)
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	ep, err := b.reg.Add(ctx, 4, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	b.change(t, holdfast.StockChange{Key: holdfast.Key{ShopID: 4, ItemID: 1, LocationID: 1}, Set: &one, Reason: "stock"})
	d, err := webhook.NewDeliverer(b.config(webhook.Config{Timeout: time.Second,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Poll: 10 * time.Millisecond, Horizon: 50 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	d.Start(ctx)
	for deadline := time.Now().Add(time.Minute); ; {
		eps, err := b.reg.List(ctx, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(eps) == 1 && eps[0].DeadLetters >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter after a minute: %+v", eps)
		}
		time.Sleep(10 * time.Millisecond) // polling the condition, not timing it
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	eps, err := b.reg.List(ctx, 4)
	if err != nil || len(eps) != 1 {
		t.Fatalf("listed %+v, %v", eps, err)
	}
	gone, err := b.reg.Remove(ctx, 4, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if gone.DeadLetters != eps[0].DeadLetters || gone.ID != ep.ID {
		t.Fatalf("removed %+v: dead_letters %d, want the endpoint's %d", gone, gone.DeadLetters, eps[0].DeadLetters)
	}
	if n := b.count(t, "webhook_dead_letters"); n != 0 {
		t.Fatalf("%d dead letters left after the removal", n)
	}
	if _, err := b.reg.Remove(ctx, 4, ep.ID); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("second removal: %v", err)
	}
}
