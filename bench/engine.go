package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
)

// engine is an engine strategy: a postgres.Client whose default strategy is
// the one measured.
type engine struct {
	client *postgres.Client
	held   string
}

func openEngine(s holdfast.Strategy, pool *pgxpool.Pool, c *counters, logger *slog.Logger) (*engine, error) {
	client, err := postgres.New(pool, holdfast.Config{Strategy: s, Observer: c, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &engine{client: client, held: query("engine_held")}, nil
}

// setupWorkers bounds the concurrent SetAvailable calls that stock a key set.
const setupWorkers = 8

func (e *engine) setup(ctx context.Context, keys []holdfast.Key, units int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan holdfast.Key)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range setupWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				if _, err := e.client.SetAvailable(ctx, k, units, "bench", "setup"); err != nil {
					once.Do(func() { first = fmt.Errorf("stock %+v: %w", k, err); cancel() })
				}
			}
		}()
	}
feed:
	for _, k := range keys {
		select {
		case next <- k:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func (e *engine) reserve(ctx context.Context, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	_, err := e.client.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: checkout, Lines: lines})
	return err
}

func (e *engine) reserveTx(ctx context.Context, tx pgx.Tx, shop int64, checkout uuid.UUID, lines []holdfast.Line) error {
	_, err := e.client.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: shop, CheckoutID: checkout, Lines: lines})
	return err
}

func (e *engine) audit(ctx context.Context) (audit, error) {
	var a audit
	rep, err := e.client.CheckInvariant(ctx)
	if err != nil {
		return a, err
	}
	for _, v := range rep.Violations {
		a.oversold += max(0, v.Pooled+v.Held-v.Available)
	}
	if !rep.OK() {
		a.problem = "invariant: " + rep.String()
	}
	err = e.client.Pool().QueryRow(ctx, e.held).Scan(&a.held)
	return a, err
}

func (e *engine) tables() []string {
	return []string{`reservation\_units\_p%`, "inventory_counters", "holds", "reserved_quantities"}
}

func (e *engine) start(ctx context.Context) { e.client.Start(ctx) }

func (e *engine) stop(ctx context.Context) error { return e.client.Stop(ctx) }

// counters is the bench's holdfast.Observer: it counts retries by SQLSTATE
// and inline replenishments. Safe for concurrent use.
type counters struct {
	mu      sync.Mutex
	retries map[string]int64
	inline  int64
}

func newCounters() *counters { return &counters{retries: map[string]int64{}} }

func (c *counters) Op(string, string, time.Duration) {}

func (c *counters) Retry(_, sqlstate string) {
	c.mu.Lock()
	c.retries[sqlstate]++
	c.mu.Unlock()
}

func (c *counters) Replenished(_ holdfast.Key, inline bool, _ int) {
	if inline {
		c.mu.Lock()
		c.inline++
		c.mu.Unlock()
	}
}

func (c *counters) Expired(int)           {}
func (c *counters) Claimed(time.Duration) {}

// snapshot returns a copy of the retry counts and the inline replenishments.
func (c *counters) snapshot() (map[string]int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.retries))
	for k, v := range c.retries {
		out[k] = v
	}
	return out, c.inline
}

// errorCode names an error for the errors-by-code count: its SQLSTATE, or
// the holdfast sentinel it matches.
func errorCode(err error) string {
	if s := postgres.SQLState(err); s != "" {
		return s
	}
	for _, e := range []struct {
		err  error
		name string
	}{
		{holdfast.ErrUnavailable, "unavailable"},
		{holdfast.ErrOutcomeUnknown, "outcome_unknown"},
		{holdfast.ErrIdempotencyConflict, "idempotency_conflict"},
		{holdfast.ErrInvalidArgument, "invalid_argument"},
		{errConflictsExhausted, "version_conflicts"},
		{context.DeadlineExceeded, "deadline"},
		{context.Canceled, "canceled"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return "other"
}
