package faulttest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres/faulttest"
	"github.com/holdfast/holdfast/postgres/pgstore"
)

// The HTTP service under a client retry storm: every reserve, claim and
// release is sent six times at once with the same checkout id, while
// COMMIT answers are lost and backends are terminated. Every answer is a
// documented status (never 500), at most one reserve per checkout answers
// 201 Created, and afterwards every hold the service acknowledged is where
// it said it was, claimable, and no unit leaked.
var _ = scenario("service/retry-storm", func(t *testing.T) {
	seed := faulttest.Seed(t)
	e := faulttest.New(t, faulttest.Options{Proxy: true, MaxConns: 12})
	ctx := context.Background()
	srv, err := httpapi.New(httpapi.Config{Engine: e.Client, Store: pgstore.Service(e.Admin), MaxInFlight: 10,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	key, _, err := httpapi.CreateKey(ctx, pgstore.Service(e.Admin), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	var keys []holdfast.Key
	for i, s := range faulttest.Strategies {
		k := holdfast.Key{ShopID: 1, ItemID: int64(20 + i), LocationID: 1}
		e.AddKey(k, s, 25)
		keys = append(keys, k)
	}
	e.Proxy.SetCutRate(0.08, seed)
	stop := e.StartKiller(80*time.Millisecond, seed)

	type answer struct {
		status int
		hold   struct {
			Status    holdfast.Status `json:"status"`
			ExpiresAt time.Time       `json:"expires_at"`
		}
	}
	post := func(path, body string) answer {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("POST %s: %v", path, err)
			return answer{}
		}
		defer resp.Body.Close()
		var a answer
		a.status = resp.StatusCode
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode < 300 {
			_ = json.Unmarshal(raw, &a.hold)
		}
		if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
			e.Violation("POST %s: %d %s", path, resp.StatusCode, raw)
		}
		return a
	}
	const dup = 6
	statuses := map[string]int{}
	var smu sync.Mutex
	storm := func(op, path, body string, co uuid.UUID) (created int) {
		var wg sync.WaitGroup
		for range dup {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := post(path, body)
				smu.Lock()
				statuses[fmt.Sprintf("%s %d", op, a.status)]++
				if a.status == http.StatusCreated {
					created++
				}
				smu.Unlock()
				switch {
				case a.status == http.StatusServiceUnavailable:
					e.Doubt(1, co)
				case a.status < 300:
					e.Acknowledge(1, co, a.hold.Status, a.hold.ExpiresAt)
				}
			}()
		}
		wg.Wait()
		e.Tally.Inject("client retry storm (concurrent duplicates)", dup-1)
		return created
	}
	for i := range rounds(12) {
		k := keys[i%len(keys)]
		co := uuid.New()
		lines := []holdfast.Line{{ItemID: k.ItemID, LocationID: 1, Quantity: 1 + i%2}}
		e.Register(1, co, lines)
		body := fmt.Sprintf(`{"checkout_id":%q,"lines":[{"item_id":%d,"location_id":1,"quantity":%d}],"ttl_seconds":300}`,
			co, k.ItemID, lines[0].Quantity)
		if n := storm("reserve", "/v1/shops/1/reservations", body, co); n > 1 {
			e.Violation("%d concurrent reserves of checkout %v answered 201 Created", n, co)
		}
		switch i % 3 {
		case 0:
			storm("claim", fmt.Sprintf("/v1/shops/1/reservations/%s/claim", co), "", co)
		case 1:
			storm("release", fmt.Sprintf("/v1/shops/1/reservations/%s/release", co), "", co)
		}
	}
	stop()
	e.Proxy.SetCutRate(0, 0)
	e.Tally.Inject("COMMIT answer lost (server committed)", int(e.Proxy.CutCommitted.Load()))
	t.Logf("answers: %v", statuses)
	e.Verify(ctx)
})
