package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// lockWaiters is how many sessions of e's database wait for a lock.
func lockWaiters(t *testing.T, e *env) int {
	t.Helper()
	var n int
	if err := e.db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRetryOfInFlightCheckoutGetsHold (#10 item 4): a checkout's first
// attempt took the key's last unit and has not committed yet (a ReserveTx
// in an open transaction); its retry must not answer "sold out" — it waits
// for the first attempt and gets the hold once it commits. On pool keys the
// retry used to skip the first attempt's locked rows and answer
// insufficient_stock. With the sold-out hint active too.
func TestRetryOfInFlightCheckoutGetsHold(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		for _, hint := range []bool{false, true} {
			name := string(s)
			if hint {
				name += "/hint"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, holdfast.Config{Strategy: s, Slots: 2, PoolCap: 5}, 0)
				ctx := context.Background()
				k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
				e.stock(k, 1)
				if hint {
					// Another checkout sells the unit out and back: the key
					// is now "recently sold out" for this client.
					other := uuid.New()
					if _, err := reserve(t, e.c, 1, other, one(1, 1)); err != nil {
						t.Fatal(err)
					}
					if _, err := reserve(t, e.c, 1, uuid.New(), one(1, 1)); !errors.Is(err, holdfast.ErrInsufficientStock) {
						t.Fatalf("sold out: %v", err)
					}
					if _, err := e.c.Release(ctx, 1, other); err != nil {
						t.Fatal(err)
					}
				}
				id := uuid.New()
				tx, err := e.db.Pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx) //nolint:errcheck
				if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, 1)}); err != nil {
					t.Fatal(err)
				}
				type result struct {
					h   *holdfast.Hold
					err error
				}
				done := make(chan result, 1)
				go func() {
					h, err := reserve(t, e.c, 1, id, one(1, 1))
					done <- result{h, err}
				}()
				var res *result
				waitFor(t, "the retry to wait for the first attempt, or answer", func() bool {
					select {
					case r := <-done:
						res = &r
						return true
					default:
						return lockWaiters(t, e) > 0
					}
				})
				if res != nil {
					t.Fatalf("the retry answered while its first attempt was in flight: %+v %v", res.h, res.err)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				r := <-done
				if r.err != nil || !r.h.Replayed || r.h.Status != holdfast.StatusHeld {
					t.Fatalf("retry after the first attempt committed: %+v %v", r.h, r.err)
				}
				if l := e.level(k); l.Held != 1 || l.Sellable != 0 {
					t.Fatalf("level: %+v", l)
				}
			})
		}
	}
}
