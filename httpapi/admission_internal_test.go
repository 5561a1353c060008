package httpapi

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAdmissionRoundRobin: one shop alone takes every slot without waiting
// (work-conserving); when shops compete, freed slots go round robin over
// the shops' queues, whatever their lengths.
func TestAdmissionRoundRobin(t *testing.T) {
	a := newAdmission(2, 100)
	ctx := context.Background()
	r1, err1 := a.acquire(ctx, 1)
	r2, err2 := a.acquire(ctx, 1)
	if err1 != nil || err2 != nil || a.waited.Load() != 0 {
		t.Fatalf("one shop alone could not take both slots at once: %v %v", err1, err2)
	}
	order := make(chan int64, 8)
	enqueue := func(shop int64) {
		n := a.waiting()
		go func() {
			rel, err := a.acquire(ctx, shop)
			if err != nil {
				t.Errorf("shop %d: %v", shop, err)
				order <- -1
				return
			}
			order <- shop
			rel()
		}()
		for a.waiting() != n+1 { // the waiter is queued
			time.Sleep(time.Millisecond)
		}
	}
	// Shop 1 queues three, then shop 2 one: shop 2 is served second.
	for _, shop := range []int64{1, 1, 1, 2} {
		enqueue(shop)
	}
	r1()
	got := []int64{<-order, <-order, <-order, <-order}
	want := []int64{1, 2, 1, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("service order %v, want %v", got, want)
		}
	}
	r2()
	if a.free != 2 || a.waiting() != 0 || len(a.ring) != 0 || len(a.shops) != 0 {
		t.Fatalf("after all released: free %d waiting %d ring %d shops %d", a.free, a.waiting(), len(a.ring), len(a.shops))
	}
}

// TestAdmissionDeadline: a request that cannot get a slot within its own
// deadline gets 503 overloaded with a Retry-After and leaves the queue; one
// that can wait is served when a slot frees.
func TestAdmissionDeadline(t *testing.T) {
	a := newAdmission(1, 100)
	rel, err := a.acquire(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, apiErr := a.acquire(ctx, 2)
	if apiErr == nil || apiErr.Code != CodeOverloaded || apiErr.RetryAfter < 1 {
		t.Fatalf("past its deadline: %v", apiErr)
	}
	if a.waiting() != 0 || len(a.ring) != 0 {
		t.Fatalf("a request that gave up is still queued")
	}
	// With an observed hold time, a deadline that cannot be met is refused
	// at once, without queueing.
	a.mu.Lock()
	a.hold = time.Hour
	a.mu.Unlock()
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	if _, apiErr := a.acquire(ctx2, 2); apiErr == nil || apiErr.RetryAfter < 3600 {
		t.Fatalf("an hour's queue within a minute's deadline: %v", apiErr)
	}
	done := make(chan *apiError, 1)
	go func() {
		r, err := a.acquire(context.Background(), 3) // no deadline: waits
		if r != nil {
			r()
		}
		done <- err
	}()
	for a.waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	rel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A queue at its bound turns requests away at once.
	b := newAdmission(1, 0)
	relB, _ := b.acquire(context.Background(), 1)
	if _, err := b.acquire(context.Background(), 1); err == nil || err.Code != CodeOverloaded {
		t.Fatalf("past QueueMax: %v", err)
	}
	relB()
}

// TestMetricsHandlerPprof: /debug/pprof/ is on the metrics handler only
// with Config.Pprof, and never on the API handler.
func TestMetricsHandlerPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		s, err := newServer(Config{Engine: ceilingEngine{}, Pprof: on, NoMetricsRoute: true})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		s.MetricsHandler().ServeHTTP(w, httptest.NewRequest("GET", "/debug/pprof/", nil))
		if got := w.Code == 200 && strings.Contains(w.Body.String(), "goroutine"); got != on {
			t.Fatalf("Pprof %v: pprof served %v (%d)", on, got, w.Code)
		}
		w = httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/debug/pprof/", nil))
		if w.Code != 404 {
			t.Fatalf("pprof on the API handler: %d", w.Code)
		}
		// The metrics address serves /metrics only: every other path
		// (the console's, the API's, /) is 404, not the metrics.
		w = httptest.NewRecorder()
		s.MetricsHandler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		if w.Code != 200 || !strings.Contains(w.Body.String(), "# TYPE") {
			t.Fatalf("Pprof %v: /metrics answered %d", on, w.Code)
		}
		for _, path := range []string{"/", "/console/", "/v1/shops/1/reservations", "/metricsx"} {
			w = httptest.NewRecorder()
			s.MetricsHandler().ServeHTTP(w, httptest.NewRequest("GET", path, nil))
			if w.Code != 404 || strings.Contains(w.Body.String(), "# TYPE") {
				t.Fatalf("Pprof %v: %s on the metrics address answered %d %.200s", on, path, w.Code, w.Body.String())
			}
		}
	}
}
