package client_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// server starts the API on a free port and returns its URL, a key for
// shop 1 and a func that stops it.
func server(t *testing.T) (*postgres.Client, string, string, func()) {
	t.Helper()
	db := pgtest.DB(t, 0)
	hc, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: hc, Store: pgstore.Service(hc.Pool())})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	key, _, err := httpapi.CreateKey(ctx, pgstore.Service(db.Pool), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	return hc, "http://" + ln.Addr().String(), key, stop
}

func TestClient(t *testing.T) {
	t.Parallel()
	hc, url, key, stop := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	if l, err := c.SetAvailable(ctx, k, 3, "stocktake", "ref-1"); err != nil || l.Available != 3 || l.Sellable != 3 {
		t.Fatalf("set: %+v %v", l, err)
	}
	if l, err := c.Adjust(ctx, k, 2, "restock", ""); err != nil || l.Available != 5 {
		t.Fatalf("adjust: %+v %v", l, err)
	}
	id := uuid.New()
	r := client.ReserveRequest{CheckoutID: id, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}}, TTL: time.Minute}
	h, err := c.Reserve(ctx, 1, r)
	if err != nil || h.Replayed || h.Status != holdfast.StatusHeld || h.ExpiresAt.Sub(h.CreatedAt) != time.Minute || !h.Claimable {
		t.Fatalf("reserve: %+v %v", h, err)
	}
	if h, err := c.Reserve(ctx, 1, r); err != nil || !h.Replayed {
		t.Fatalf("replay: %+v %v", h, err)
	}
	if h, err := c.Extend(ctx, 1, id, 2*time.Minute); err != nil || h.ExpiresAt.Sub(h.CreatedAt) < 2*time.Minute {
		t.Fatalf("extend: %+v %v", h, err)
	}
	if h, err := c.Hold(ctx, 1, id); err != nil || h.CheckoutID != id || len(h.Lines) != 1 {
		t.Fatalf("hold: %+v %v", h, err)
	}

	_, err = c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 4}}})
	var ce *client.Error
	if !errors.Is(err, holdfast.ErrInsufficientStock) || !errors.As(err, &ce) || ce.Status != 409 ||
		len(ce.Lines) != 1 || ce.Lines[0] != (holdfast.Shortfall{ItemID: 7, LocationID: 1, Requested: 4, Sellable: 3}) {
		t.Fatalf("short reserve: %#v", err)
	}
	if errors.Is(err, holdfast.ErrNotFound) {
		t.Fatal("insufficient_stock matches ErrNotFound")
	}
	_, err = c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: id, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 1}}})
	if !errors.Is(err, holdfast.ErrIdempotencyConflict) {
		t.Fatalf("conflict: %v", err)
	}
	_, err = c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 0}}})
	if !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ce) || ce.Field != "lines[0].quantity" || ce.Status != 422 {
		t.Fatalf("invalid: %v", err)
	}
	if _, err := c.Claim(ctx, 1, uuid.New()); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("claim unknown: %v", err)
	}
	if h, err := c.Claim(ctx, 1, id); err != nil || h.Status != holdfast.StatusClaimed || h.Claimable {
		t.Fatalf("claim: %+v %v", h, err)
	}
	if _, err := c.Release(ctx, 1, id); !errors.Is(err, holdfast.ErrHoldClaimed) {
		t.Fatalf("release claimed: %v", err)
	}
	id2 := uuid.New()
	if _, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: id2, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	if h, err := c.Release(ctx, 1, id2); err != nil || h.Status != holdfast.StatusReleased {
		t.Fatalf("release: %+v %v", h, err)
	}
	if _, err := c.Claim(ctx, 1, id2); !errors.Is(err, holdfast.ErrHoldReleased) {
		t.Fatalf("claim released: %v", err)
	}
	if _, err := c.Level(ctx, holdfast.Key{ShopID: 2, ItemID: 7, LocationID: 1}); !errors.As(err, &ce) || ce.Code != "forbidden" || ce.Status != 403 {
		t.Fatalf("other shop: %v", err)
	}
	if _, err := client.New(url, "hf_wrong").Level(ctx, k); !errors.As(err, &ce) || ce.Code != "unauthorized" {
		t.Fatalf("bad key: %v", err)
	}
	if l, err := c.Level(ctx, k); err != nil || l.Available != 3 || l.Held != 0 {
		t.Fatalf("level: %+v %v", l, err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}

	// A server that is gone: unavailable (never sent), for every call.
	stop()
	if _, err := c.Claim(ctx, 1, id); !errors.Is(err, holdfast.ErrUnavailable) {
		t.Fatalf("claim on a stopped server: %v", err)
	}
	if _, err := c.Adjust(ctx, k, 1, "x", ""); !errors.Is(err, holdfast.ErrUnavailable) {
		t.Fatalf("adjust on a stopped server: %v", err)
	}
	rep, err := hc.CheckInvariant(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("invariant: %v %v", rep, err)
	}
}

// TestErrorIs covers the code-to-sentinel mapping, both ways.
// TestNotStocked: the client answers a key never stocked with an *Error
// matching holdfast.ErrNotStocked (and ErrInsufficientStock), a sold-out
// key with one matching ErrInsufficientStock only.
func TestNotStocked(t *testing.T) {
	t.Parallel()
	_, url, key, _ := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	if _, err := c.SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}, 0, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	_, err := c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 70, LocationID: 1, Quantity: 1}}})
	var ce *client.Error
	if !errors.Is(err, holdfast.ErrNotStocked) || !errors.Is(err, holdfast.ErrInsufficientStock) || !errors.As(err, &ce) || ce.Code != "not_stocked" || len(ce.Lines) != 1 || !ce.Lines[0].NotStocked {
		t.Fatalf("reserve of a key never stocked: %v", err)
	}
	_, err = c.Reserve(ctx, 1, client.ReserveRequest{CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 1}}})
	if !errors.Is(err, holdfast.ErrInsufficientStock) || errors.Is(err, holdfast.ErrNotStocked) {
		t.Fatalf("reserve of a sold-out key: %v", err)
	}
}

func TestErrorIs(t *testing.T) {
	t.Parallel()
	all := []error{holdfast.ErrInvalidArgument, holdfast.ErrInsufficientStock, holdfast.ErrIdempotencyConflict,
		holdfast.ErrNotFound, holdfast.ErrHoldClaimed, holdfast.ErrHoldReleased, holdfast.ErrHoldExpired,
		holdfast.ErrLifetimeExceeded, holdfast.ErrOverCommitted, holdfast.ErrUnavailable, holdfast.ErrOutcomeUnknown}
	for code, want := range map[string]error{
		"insufficient_stock": holdfast.ErrInsufficientStock, "idempotency_conflict": holdfast.ErrIdempotencyConflict,
		"not_found": holdfast.ErrNotFound, "hold_claimed": holdfast.ErrHoldClaimed, "hold_released": holdfast.ErrHoldReleased,
		"hold_expired": holdfast.ErrHoldExpired, "lifetime_exceeded": holdfast.ErrLifetimeExceeded,
		"over_committed": holdfast.ErrOverCommitted, "unavailable": holdfast.ErrUnavailable, "overloaded": holdfast.ErrUnavailable,
		"outcome_unknown": holdfast.ErrOutcomeUnknown, "invalid_argument": holdfast.ErrInvalidArgument,
		"unknown_field": holdfast.ErrInvalidArgument, "forbidden": nil, "unauthorized": nil,
	} {
		err := error(&client.Error{Code: code})
		for _, s := range all {
			if got := errors.Is(err, s); got != (s == want) {
				t.Errorf("code %s: errors.Is(%v) = %v", code, s, got)
			}
		}
	}
}
