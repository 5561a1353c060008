package redis_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast"
	lredis "github.com/holdfast/holdfast/legacy/redis"
	"github.com/holdfast/holdfast/rediscluster"
)

func client(t *testing.T) *goredis.Client {
	t.Helper()
	u := os.Getenv("REDIS_URL")
	if u == "" {
		srv, err := rediscluster.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Stop() })
		u = srv.URL()
	}
	opt, err := goredis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestReserveReleaseExpire: the Redis design without its SQL side: DECRBY
// holds, a short cart gives everything back, release and expiry INCRBY.
func TestReserveReleaseExpire(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	now := time.Now()
	p := "t:" + uuid.NewString() + ":"
	s, err := lredis.New(rdb, nil, lredis.Config{Prefix: p, KeyTemplate: p + "{shop}:{item}:{location}", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	a := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	b := holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}
	rdb.Set(ctx, s.CounterKey(a), 3, 0)
	rdb.Set(ctx, s.CounterKey(b), 1, 0)
	count := func(k holdfast.Key) int64 { n, _ := rdb.Get(ctx, s.CounterKey(k)).Int64(); return n }
	reserve := func(id uuid.UUID, qa, qb int) error {
		_, err := s.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, TTL: time.Minute,
			Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: qa}, {ItemID: 2, LocationID: 1, Quantity: qb}}})
		return err
	}
	x, y := uuid.New(), uuid.New()
	if err := reserve(x, 2, 1); err != nil {
		t.Fatal(err)
	}
	var short *holdfast.InsufficientStockError
	if err := reserve(y, 1, 1); !errors.As(err, &short) || len(short.Lines) != 1 || short.Lines[0].ItemID != 2 {
		t.Fatalf("second cart: %v, want item 2 short", err)
	}
	if count(a) != 1 || count(b) != 0 {
		t.Fatalf("counters %d %d after a refused cart, want 1 0 (given back)", count(a), count(b))
	}
	if h, err := s.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: x, TTL: time.Minute,
		Lines: []holdfast.Line{{ItemID: 2, LocationID: 1, Quantity: 1}, {ItemID: 1, LocationID: 1, Quantity: 2}}}); err != nil || !h.Replayed {
		t.Fatalf("retry: %v", err)
	}
	if _, err := s.Release(ctx, 1, x); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Release(ctx, 1, x); err != nil || !h.Replayed {
		t.Fatalf("second release: %v", err)
	}
	if count(a) != 3 || count(b) != 1 {
		t.Fatalf("counters %d %d after release, want 3 1", count(a), count(b))
	}
	if err := reserve(y, 1, 1); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if n, err := s.ExpireOnce(ctx); err != nil || n != 1 {
		t.Fatalf("expire: %d, %v", n, err)
	}
	if count(a) != 3 || count(b) != 1 {
		t.Fatalf("counters %d %d after expiry, want 3 1", count(a), count(b))
	}
	if _, err := s.Claim(ctx, 1, y); !errors.Is(err, holdfast.ErrHoldExpired) {
		t.Fatalf("claim of an expired hold: %v", err)
	}
}

// TestBenchReserve: the bench's Redis row holds exactly its attempts, and
// cleans up its keys.
func TestBenchReserve(t *testing.T) {
	rdb := client(t)
	r, err := lredis.BenchReserve(context.Background(), rdb, 8, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if r.Held != 2000 || r.Errors != 0 || r.Oversold != 0 || r.HoldsPerSec <= 0 {
		t.Fatalf("%+v", r)
	}
	t.Logf("redis design, 8 clients, one hot key: %.0f holds/s", r.HoldsPerSec)
	if _, err := lredis.BenchReserve(context.Background(), rdb, 0, 10); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Fatalf("0 clients: %v", err)
	}
}
