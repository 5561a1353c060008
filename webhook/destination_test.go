package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/webhook"
)

// TestDestinationRefused (#24 item 7): a registration whose host is, or
// resolves to, a loopback, link-local, private or unspecified address (in
// any spelling) is an *ArgumentError on url and writes nothing, unless the
// deployment allows the network; and the deliverer checks every
// connection again: an endpoint that reaches a refused address gets no
// request and its last_error says only "destination refused".
func TestDestinationRefused(t *testing.T) { t.Parallel(); engines(t, testDestinationRefused) }

func testDestinationRefused(t *testing.T, engine string) {
	b := newBackend(t, engine, 6)
	ctx := context.Background()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	strict := b.reg.With(webhook.Options{SecretKey: []byte("0123456789abcdef0123456789abcdef")})
	for _, u := range []string{
		srv.URL + "/v1/admin/keys",
		"http://localhost" + port + "/hook",
		"http://[::1]" + port + "/",
		"http://[::ffff:127.0.0.1]" + port + "/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fe80::1]/",
		"http://10.0.0.1/hook",
		"http://172.16.5.4/hook",
		"https://192.168.1.1/hook",
		"http://100.64.0.1/hook",
		"http://[fd00::1]/hook",
		"http://0.0.0.0" + port + "/",
		"http://[::]/",
		"http://0x7f000001" + port + "/",
		"http://2130706433" + port + "/",
		"http://127.1" + port + "/",
		"http://0177.0.0.1" + port + "/",
	} {
		_, err := strict.Add(ctx, 1, u, nil)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != "url" {
			t.Errorf("register %s: %v; want an *ArgumentError on url", u, err)
		}
	}
	if n := b.count(t, "webhook_endpoints"); n != 0 {
		t.Fatalf("%d endpoints stored after refused registrations, want 0", n)
	}

	// Allowed networks (serve --webhook-allow-networks): accepted.
	ep, err := b.reg.Add(ctx, 1, srv.URL+"/hook", nil)
	if err != nil {
		t.Fatalf("register a loopback URL with 127.0.0.0/8 allowed: %v", err)
	}
	// A deliverer of a deployment that allows none refuses it at connect
	// time (the URL's host was fine when registered).
	d, err := webhook.NewDeliverer(b.config(webhook.Config{Workers: 2, Timeout: time.Second,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Poll: 20 * time.Millisecond, Horizon: time.Hour,
		Options: webhook.Options{SecretKey: []byte("0123456789abcdef0123456789abcdef")}}))
	if err != nil {
		t.Fatal(err)
	}
	d.Start(ctx)
	defer d.Stop(ctx) //nolint:errcheck
	n := 3
	b.change(t, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, Set: &n, Reason: "stock"})
	var eps []webhook.Endpoint
	for deadline := time.Now().Add(30 * time.Second); ; {
		eps, err = b.reg.List(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(eps) == 1 && eps[0].Attempts >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint %+v: never retried", eps)
		}
		time.Sleep(10 * time.Millisecond) // polling the condition, not timing it
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if le := eps[0].LastError; le != webhook.ErrDestinationRefused.Error() || strings.Contains(le, port[1:]) || strings.Contains(le, host) {
		t.Fatalf("last_error %q: want only %q (no address, port or dial detail)", le, webhook.ErrDestinationRefused.Error())
	}
	if hits.Load() != 0 {
		t.Fatalf("the refused destination got %d requests", hits.Load())
	}
	if eps[0].ID != ep.ID || eps[0].Cursor != ep.Cursor {
		t.Fatalf("endpoint %+v moved past an undelivered event", eps[0])
	}
}

// storedSecret is an endpoint's secret column as stored.
func (b backend) storedSecret(t *testing.T, id int64) string {
	t.Helper()
	var s string
	var err error
	if b.db != nil {
		err = b.db.QueryRowContext(context.Background(), "SELECT secret FROM webhook_endpoints WHERE id = ?", id).Scan(&s)
	} else {
		err = b.pool.QueryRow(context.Background(), "SELECT secret FROM webhook_endpoints WHERE id = $1", id).Scan(&s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSecretEncryptedAtRest (#24 item 7): the stored secret is sealed
// with the deployment's key (neither the secret nor its hex appear in the
// row); a deliverer with the key signs with the real secret, one with
// another key delivers nothing.
func TestSecretEncryptedAtRest(t *testing.T) { t.Parallel(); engines(t, testSecretEncryptedAtRest) }

func testSecretEncryptedAtRest(t *testing.T, engine string) {
	b := newBackend(t, engine, 6)
	ctx := context.Background()
	var good, bad atomic.Int64
	var secret atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 1<<16)
		n, _ := r.Body.Read(body)
		if webhook.Verify(secret.Load().(string), r.Header.Get(webhook.SignatureHeader), body[:n], time.Now(), 0) == nil {
			good.Add(1)
		} else {
			bad.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	ep, err := b.reg.Add(ctx, 1, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret.Store(ep.Secret)
	stored := b.storedSecret(t, ep.ID)
	if strings.Contains(stored, ep.Secret) || strings.Contains(stored, strings.TrimPrefix(ep.Secret, "whsec_")) || len(stored) > 100 {
		t.Fatalf("stored secret %q holds the secret %q (or does not fit VARCHAR(100))", stored, ep.Secret)
	}
	other := testOptions
	other.SecretKey = []byte("another key, 32 bytes long......")
	wrong, err := webhook.NewDeliverer(b.config(webhook.Config{Timeout: time.Second, Poll: 20 * time.Millisecond, Options: other}))
	if err != nil {
		t.Fatal(err)
	}
	wrong.Start(ctx)
	n := 1
	b.change(t, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, Set: &n, Reason: "stock"})
	// The wrong key is visible on the endpoint (webhooks list's LAST
	// ERROR), not only in the log, and retried with backoff.
	for deadline := time.Now().Add(30 * time.Second); ; {
		eps, err := b.reg.List(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(eps) == 1 && strings.Contains(eps[0].LastError, "sealed with another webhook key") && eps[0].Attempts >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint after a deliverer with another key: %+v; want last_error naming the key", eps)
		}
		time.Sleep(10 * time.Millisecond) // polling the condition, not timing it
	}
	if err := wrong.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	right, err := webhook.NewDeliverer(b.config(webhook.Config{Timeout: time.Second, Poll: 20 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	right.Start(ctx)
	defer right.Stop(ctx) //nolint:errcheck
	for deadline := time.Now().Add(30 * time.Second); good.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no delivery signed with the registered secret")
		}
		time.Sleep(10 * time.Millisecond) // polling the condition, not timing it
	}
	if bad.Load() != 0 {
		t.Fatalf("%d deliveries signed with something else than the registered secret", bad.Load())
	}
}
