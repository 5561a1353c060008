package holdfast_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/migrate"
	"github.com/holdfast/holdfast/pgtest"
)

// TestLapsedHoldReadsExpiredClaimable (#12 item 5): after its TTL and
// before the sweep, a hold is reported expired and claimable — by Hold and
// by a Reserve retry — never "held" with an expiry in the past; a Release
// of it answers like one of an expired hold and gives its units back.
func TestLapsedHoldReadsExpiredClaimable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{Strategy: holdfast.StrategyCounter}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 5)
	p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, 2), TTL: time.Minute}
	h, err := e.c.Reserve(ctx, p)
	if err != nil || h.Status != holdfast.StatusHeld || !h.Claimable {
		t.Fatalf("reserve: %+v %v", h, err)
	}
	if h, err := e.c.Hold(ctx, 1, p.CheckoutID); err != nil || h.Status != holdfast.StatusHeld || !h.Claimable {
		t.Fatalf("fresh hold: %+v %v", h, err)
	}
	e.clock.Advance(2 * time.Minute)
	if h, err := e.c.Hold(ctx, 1, p.CheckoutID); err != nil || h.Status != holdfast.StatusExpired || !h.Claimable {
		t.Fatalf("lapsed hold read: %+v %v", h, err)
	}
	if h, err := e.c.Reserve(ctx, p); err != nil || h.Status != holdfast.StatusExpired || !h.Claimable || !h.Replayed {
		t.Fatalf("reserve retry of a lapsed hold: %+v %v", h, err)
	}
	if h, err := e.c.Release(ctx, 1, p.CheckoutID); err != nil || h.Status != holdfast.StatusExpired || h.Claimable {
		t.Fatalf("release of a lapsed hold: %+v %v", h, err)
	}
	if h, err := e.c.Hold(ctx, 1, p.CheckoutID); err != nil || h.Status != holdfast.StatusExpired || h.Claimable {
		t.Fatalf("after release: %+v %v", h, err)
	}
	if l := e.level(k); l.Held != 0 || l.Sellable != 5 {
		t.Fatalf("units not back: %+v", l)
	}
}

// TestNewChecksSchemaVersion (#12 item 5): New on a database without the
// schema, or with an older one, says to run `holdfast migrate` with a
// typed error.
func TestNewChecksSchemaVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty := pgtest.EmptyDB(t, 2)
	if _, err := holdfast.New(empty.Pool, holdfast.Config{}); !errors.Is(err, holdfast.ErrSchemaMissing) || !strings.Contains(err.Error(), "holdfast migrate") {
		t.Fatalf("empty database: %v", err)
	}
	old := pgtest.EmptyDB(t, 2)
	first := migrate.All()[0]
	for _, stmt := range []string{
		first.SQL,
		"CREATE TABLE holdfast_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT clock_timestamp())",
		"INSERT INTO holdfast_migrations (version, name) VALUES (1, 'init')",
	} {
		if _, err := old.Pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := holdfast.New(old.Pool, holdfast.Config{}); !errors.Is(err, holdfast.ErrSchemaOutdated) || !strings.Contains(err.Error(), "holdfast migrate") {
		t.Fatalf("version 1 database: %v", err)
	}
	if _, err := migrate.Up(ctx, old.Pool); err != nil {
		t.Fatal(err)
	}
	if _, err := holdfast.New(old.Pool, holdfast.Config{}); err != nil {
		t.Fatalf("after migrate: %v", err)
	}
}
