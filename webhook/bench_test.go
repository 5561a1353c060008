package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
	"github.com/holdfast/holdfast/webhook"
)

// BenchmarkDelivery measures webhook delivery with serve's defaults (4
// workers, 1 s poll) to one local receiver that verifies every signature,
// while 8 writers reserve and release (2 events per checkout): events/s
// delivered (live: first write to last receipt; backlog: start of the
// deliverer to last receipt) and the lag from each event's
// time to its receipt (p50, p99). Run it with -benchtime=1x:
//
//	go test -run '^$' -bench Delivery -benchtime=1x ./webhook/
func BenchmarkDelivery(b *testing.B) {
	b.Run("live", func(b *testing.B) { benchmarkDelivery(b, true) })
	// backlog: the events are written first, then the deliverer starts:
	// what one endpoint drains, apart from the writers' pace.
	b.Run("backlog", func(b *testing.B) { benchmarkDelivery(b, false) })
}

func benchmarkDelivery(b *testing.B, live bool) {
	checkouts := 1000
	for range b.N {
		db := pgtest.DB(b, 20)
		ctx := context.Background()
		c, err := postgres.New(db.Pool, holdfast.Config{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 1_000_000, "stock", ""); err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		var lags []time.Duration
		var secret string
		want := 2 * checkouts
		done := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			if webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), 0) != nil {
				b.Error("signature does not verify")
			}
			var ev holdfast.Event
			_ = json.Unmarshal(body, &ev)
			lags = append(lags, time.Since(ev.At))
			if len(lags) == want {
				close(done)
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		ep, err := webhook.NewRegistry(pgstore.Webhooks(db.Pool)).With(testOptions).Add(ctx, 1, srv.URL, nil)
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		secret = ep.Secret
		mu.Unlock()
		d, err := webhook.NewDeliverer(webhook.Config{Store: pgstore.Webhooks(db.Pool), Events: c, Options: testOptions})
		if err != nil {
			b.Fatal(err)
		}
		if live {
			d.Start(ctx)
		}
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < checkouts; i += 8 {
					id := uuid.New()
					if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
						b.Error(err)
						return
					}
					if _, err := c.Release(ctx, 1, id); err != nil {
						b.Error(err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		writes := time.Since(start)
		if !live {
			start = time.Now()
			d.Start(ctx)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			b.Fatal("not every event was delivered")
		}
		elapsed := time.Since(start)
		b.StopTimer()
		_ = d.Stop(ctx)
		srv.Close()
		mu.Lock()
		slices.Sort(lags)
		b.ReportMetric(float64(want)/elapsed.Seconds(), "events/s")
		b.ReportMetric(float64(want)/writes.Seconds(), "written/s")
		b.ReportMetric(float64(lags[len(lags)/2].Milliseconds()), "p50-lag-ms")
		b.ReportMetric(float64(lags[len(lags)*99/100].Milliseconds()), "p99-lag-ms")
		mu.Unlock()
	}
}
