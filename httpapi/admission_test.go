package httpapi_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// burst runs n concurrent requests made by mk and returns their responses.
func (e *env) burst(n int, mk func(i int) req) []*resp {
	e.t.Helper()
	e.http = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	out := make([]*resp, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := e.try(mk(i))
			if err != nil {
				e.t.Errorf("request %d: %v", i, err)
				return
			}
			out[i] = r
		}()
	}
	close(start)
	wg.Wait()
	return out
}

func statuses(rs []*resp) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		if r != nil {
			m[fmt.Sprintf("%d %s", r.status, r.errCode())]++
		}
	}
	return m
}

// TestOneShopBurst: on an idle server with the default bounds, one shop's
// bursts are served, never turned away with 503: 64 buyers of one hot key,
// 32 concurrent retries of one checkout, and 64 buyers racing two-line
// carts for less stock than they want.
func TestOneShopBurst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.stock(1, 7, 1000)
	rs := e.burst(64, func(int) req {
		return req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(7, 1), "")}
	})
	if got := statuses(rs); got["201 "] != 64 {
		t.Fatalf("64 buyers of one key: %v, want 64 × 201", got)
	}

	id := uuid.New()
	rs = e.burst(32, func(int) req {
		return req{method: "POST", path: res1, key: "shop1", body: reserveBody(id, line(7, 2), "")}
	})
	if got := statuses(rs); got["201 "]+got["200 "] != 32 || got["201 "] < 1 {
		t.Fatalf("32 retries of one checkout: %v, want 32 × 200/201", got)
	}
	if r := e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1", key: "shop1"}, 200, ""); r.json["held"] != float64(64+2) {
		t.Fatalf("held after the bursts: %s", r.body)
	}

	// Two-line carts: 64 buyers want 2 + 1 units of items 8 and 9, with
	// stock for 40 carts: 40 get theirs, 24 are told why not.
	e.stock(1, 8, 80)
	e.stock(1, 9, 100)
	rs = e.burst(64, func(int) req {
		return req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(8, 2)+","+line(9, 1), "")}
	})
	if got := statuses(rs); got["201 "] != 40 || got["409 insufficient_stock"] != 24 {
		t.Fatalf("64 two-line carts for 40: %v", got)
	}
}
