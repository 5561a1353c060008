package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgstore"
)

func init() { startHTTPBackend = startDemoHTTP }

// startDemoHTTP serves the API in-process on a free loopback port with a
// fresh key for shop, and returns a backend that drives it through the Go
// client. The func stops the server (draining) and revokes the key.
func startDemoHTTP(ctx context.Context, hc *postgres.Client, pool *pgxpool.Pool, shop int64) (demoBackend, func(), error) {
	store := pgstore.Service(pool)
	key, rec, err := httpapi.CreateKey(ctx, store, shop, false)
	if err != nil {
		return nil, nil, err
	}
	// The sale's buyers all belong to one shop: let it use every slot the
	// pool can spare, and wait for one rather than fail fast.
	inflight := max(1, int(pool.Config().MaxConns)-4)
	srv, err := httpapi.New(httpapi.Config{
		Engine: hc, Store: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxInFlight: inflight,
	})
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	url := "http://" + ln.Addr().String()
	fmt.Printf("HTTP API at %s (key %d for shop %d)\n", url, rec.ID, shop)
	hcl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute,
	}}
	stop := func() {
		cancel()
		<-done
		_, _ = httpapi.RevokeKey(context.Background(), store, key)
	}
	return demoHTTP{client.New(url, key, client.WithHTTPClient(hcl))}, stop, nil
}

// demoHTTP adapts the client to the demo's backend.
type demoHTTP struct{ c *client.Client }

func (d demoHTTP) Reserve(ctx context.Context, p holdfast.ReserveParams) (*holdfast.Hold, error) {
	return d.c.Reserve(ctx, p.ShopID, client.ReserveRequest{CheckoutID: p.CheckoutID, Lines: p.Lines, TTL: p.TTL})
}

func (d demoHTTP) Claim(ctx context.Context, shop int64, id uuid.UUID) (*holdfast.Hold, error) {
	return d.c.Claim(ctx, shop, id)
}

func (d demoHTTP) Release(ctx context.Context, shop int64, id uuid.UUID) (*holdfast.Hold, error) {
	return d.c.Release(ctx, shop, id)
}
