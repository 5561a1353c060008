package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/holdfast/holdfast"
)

// BenchAttemptsMax bounds one BenchReserve run.
const BenchAttemptsMax = 10_000_000

// BenchResult is one BenchReserve run.
type BenchResult struct {
	Clients     int           `json:"clients"`
	Attempts    int           `json:"attempts"`
	Held        int           `json:"held"`
	Short       int           `json:"short"`
	Errors      int           `json:"errors"`
	Elapsed     time.Duration `json:"elapsed"`
	HoldsPerSec float64       `json:"holds_per_sec"`
	// Oversold is held beyond the stock (always 0 for this design: the
	// script gives a negative counter back).
	Oversold int `json:"oversold"`
}

// BenchReserve runs the legacy's reserve — the full per-checkout hold (one
// script: DECRBY, give back when negative, the checkout's hold hash and its
// TTL in the expiry set), not just the counter — on one hot key with
// clients goroutines for attempts reservations of one unit, with stock for
// every one, and returns holds/s. It writes under a fresh key prefix and
// deletes its keys afterwards. For `holdfast bench`'s Redis row, beside
// holdfast's strategies.
func BenchReserve(ctx context.Context, rdb goredis.UniversalClient, clients, attempts int) (*BenchResult, error) {
	if clients < 1 || clients > 4096 {
		return nil, &holdfast.ArgumentError{Field: "clients", Reason: "must be between 1 and 4096"}
	}
	if attempts < 1 || attempts > BenchAttemptsMax {
		return nil, &holdfast.ArgumentError{Field: "attempts", Reason: fmt.Sprintf("must be between 1 and %d", BenchAttemptsMax)}
	}
	prefix := "holdfast:bench:" + uuid.NewString() + ":"
	s, err := New(rdb, nil, Config{Prefix: prefix, KeyTemplate: prefix + "stock:{shop}:{item}:{location}"})
	if err != nil {
		return nil, err
	}
	defer s.dropPrefix(context.WithoutCancel(ctx), prefix)
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	stock := attempts
	if err := rdb.Set(ctx, s.CounterKey(k), stock, 0).Err(); err != nil {
		return nil, unavailable(err)
	}
	var next, held, short, errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(attempts) && ctx.Err() == nil {
				_, err := s.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), TTL: 15 * time.Minute,
					Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
				switch {
				case err == nil:
					held.Add(1)
				case errors.Is(err, holdfast.ErrInsufficientStock):
					short.Add(1)
				default:
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	r := &BenchResult{Clients: clients, Attempts: attempts, Held: int(held.Load()), Short: int(short.Load()), Errors: int(errs.Load()), Elapsed: el}
	r.HoldsPerSec = float64(r.Held) / el.Seconds()
	r.Oversold = max(0, r.Held-stock)
	return r, ctx.Err()
}

// dropPrefix deletes every key under prefix, in SCAN batches.
func (s *Store) dropPrefix(ctx context.Context, prefix string) {
	iter := s.rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			s.rdb.Del(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		s.rdb.Del(ctx, batch...)
	}
}
