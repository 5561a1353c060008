package httpbench_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/httpapi/httpbench"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestProfileServeHot writes a CPU profile of the service (in this process,
// over a private database) under the hot scenario at 64 clients, to the
// file named by HOLDFAST_HTTPBENCH_PROFILE; skipped without it. Read it with
// `go tool pprof -top -cum <file>`.
func TestProfileServeHot(t *testing.T) {
	out := os.Getenv("HOLDFAST_HTTPBENCH_PROFILE")
	if out == "" {
		t.Skip("set HOLDFAST_HTTPBENCH_PROFILE=<file> to profile")
	}
	db := pgtest.DB(t, 20)
	ctx := context.Background()
	hc, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: hc, Store: pgstore.Service(hc.Pool()), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := httpapi.CreateKey(ctx, pgstore.Service(db.Pool), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hc.SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}, 100_000_000, "bench", ""); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	defer func() { cancel(); <-done }()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128}}
	side := httpbench.Measure(ctx, "service in-process", 64, time.Second, 5*time.Second, httpbench.Reserver(c, "http://"+ln.Addr().String(), key, 1))
	pprof.StopCPUProfile()
	t.Logf("%s: %.0f holds/s, p50 %v, p99 %v, %v", side.Name, side.PerSec, side.P50, side.P99, side.Statuses)
}
