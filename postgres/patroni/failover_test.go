package patroni_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/failovertest"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrate"
)

// serve is the PostgreSQL glue of the failover runner: holdfast's HTTP API
// in-process, as `holdfast serve` wires it (a pool that follows the
// primary, postgres.Follow), on the cluster's multi-host URL.
func serve(t *testing.T, url string) failovertest.Service {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 16
	follow := postgres.Follow(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	follow.Attach(pool)
	t.Cleanup(pool.Close)
	if _, err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Client: hc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	key, _, err := httpapi.CreateKey(ctx, pool, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	return failovertest.Service{URL: "http://" + ln.Addr().String(), Key: key, Shop: 1,
		Invariant: func(ctx context.Context) error {
			rep, err := hc.CheckInvariant(ctx)
			if err != nil {
				return err
			}
			if !rep.OK() {
				return fmt.Errorf("invariant violated: %+v %+v", rep.Violations, rep.Defects)
			}
			return nil
		}}
}

// TestFailover runs the failover runner on the Patroni cluster: one
// failover of each kind (kill -9, freeze, switchover), or 20 of each with
// HOLDFAST_FAILOVER_FULL=1. Nothing acknowledged is lost, no answer lies,
// the invariant holds; windows and throughput are measured and printed.
func TestFailover(t *testing.T) {
	svc := serve(t, cluster.URL())
	res := failovertest.Run(t, failovertest.Options{Cluster: cluster, Service: svc})
	for _, r := range res {
		// The bound with the test timings; the 2 s bound over the
		// plain probe is asserted on the full form only (a loaded CI
		// machine stretches single measurements).
		if r.Unavailable > 20*time.Second+3*failovertest.Slack() {
			t.Errorf("%s: unavailable %.1fs, more than 20 s", r.Kind, r.Unavailable.Seconds())
		}
		if failovertest.Full() && r.Unavailable-r.Probe > 2*time.Second {
			t.Errorf("%s: holdfast unavailable %.1fs, plain probe %.1fs: holdfast adds more than 2 s", r.Kind, r.Unavailable.Seconds(), r.Probe.Seconds())
		}
	}
}
