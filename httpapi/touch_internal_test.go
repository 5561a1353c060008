package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pgtest"
)

// TestServeOutlivesNoKeyTouch: Serve returns only once the background
// write of a key's last-used time has ended, even when that write is stuck
// on a row lock, so the caller may close the pool right after. It used to
// return with the write still running (up to 5 s against a closing pool).
func TestServeOutlivesNoKeyTouch(t *testing.T) {
	db := pgtest.DB(t, 4)
	hc, err := holdfast.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Client: hc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		DrainTimeout: 200 * time.Millisecond, KeyCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key, k, err := CreateKey(ctx, db.Pool, 1, false)
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
