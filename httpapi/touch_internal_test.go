package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestServeOutlivesNoKeyTouch: Serve returns only once the background
// write of a key's last-used time has ended, even when that write is stuck
// on a row lock, so the caller may close the pool right after. It used to
// return with the write still running (up to 5 s against a closing pool).
func TestServeOutlivesNoKeyTouch(t *testing.T) {
	db := pgtest.DB(t, 4)
	hc, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Engine: hc, Store: PostgresStoreForTest(hc.Pool()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		DrainTimeout: 200 * time.Millisecond, KeyCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key, k, err := CreateKey(ctx, PostgresStoreForTest(db.Pool), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the key's row so its last-used UPDATE waits.
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM api_keys WHERE id = $1 FOR UPDATE`, k.ID); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/v1/shops/1/inventory/7/1", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if len(srv.auth.touching) != 1 {
		t.Fatalf("no last-used write in flight after an authenticated request (%d)", len(srv.auth.touching))
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return")
	}
	if n := len(srv.auth.touching); n != 0 {
		t.Fatalf("Serve returned with %d last-used write(s) still running", n)
	}
}

// TestKeyLookupOutlivesItsCaller: requests sharing one key's lookup get its
// answer even when the request that started it gives up; it used to hand
// them that request's context error (a 503 for a shop whose key is fine).
func TestKeyLookupOutlivesItsCaller(t *testing.T) {
	db := pgtest.DB(t, 4)
	ctx := context.Background()
	key, k, err := CreateKey(ctx, PostgresStoreForTest(db.Pool), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	a := newAuthenticator(PostgresStoreForTest(db.Pool), time.Hour)
	defer a.stop(ctx)
	// Take every lookup slot, so the lookup waits where it can be seen.
	for range KeyLookupsMax {
		a.lookups <- struct{}{}
	}
	type result struct {
		p   principal
		err error
	}
	leaderCtx, giveUp := context.WithCancel(ctx)
	leader, follower := make(chan result, 1), make(chan result, 1)
	go func() { p, err := a.authenticate(leaderCtx, key); leader <- result{p, err} }()
	poll(t, "the lookup to queue", func() bool { return a.lookupsQueue.Load() == 1 })
	go func() { p, err := a.authenticate(ctx, key); follower <- result{p, err} }()
	poll(t, "the second request to join the lookup", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, f := range a.flights {
			if f.waiters == 1 {
				return true
			}
		}
		return false
	})
	giveUp()
	if r := <-leader; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the request that gave up: %+v", r)
	}
	for range KeyLookupsMax {
		<-a.lookups
	}
	if r := <-follower; r.err != nil || r.p.keyID != k.ID {
		t.Fatalf("the request that joined: %+v, want key %d", r, k.ID)
	}
}

// poll waits for cond, checking every millisecond, for at most a minute.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
