package postgres_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
)

// roundTrips counts a connection's round trips: each statement sent on its
// own, each batch (one pipeline) and each prepare.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (r *roundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// TestReserveTxOneRoundTrip (issue #29 item 4): a reservation inside a
// caller's transaction, on a key whose strategy the client knows, is one
// round trip on the caller's connection — SAVEPOINT, hold, take, lines and
// RELEASE in one pipeline — for every strategy; and the answers the
// pipeline hands to the long way stay right: a shortage is an
// *InsufficientStockError with the caller's transaction usable and without
// the failed reservation's writes, a replay answers the hold.
func TestReserveTxOneRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, holdfast.Config{Strategy: s}, 0)
			ctx := context.Background()
			k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
			e.stock(k, 3)
			cfg := e.db.Pool.Config().ConnConfig.Copy()
			rt := &roundTrips{}
			cfg.Tracer = rt
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			// in runs fn in a transaction of conn and commits it, and
			// answers the round trips fn made.
			in := func(fn func(tx pgx.Tx) error) int64 {
				t.Helper()
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				before := rt.n.Load()
				if err := fn(tx); err != nil {
					t.Fatal(err)
				}
				n := rt.n.Load() - before
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				return n
			}
			reserveTx := func(tx pgx.Tx, id uuid.UUID, q int) (*holdfast.Hold, error) {
				return e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: one(1, q)})
			}
			// The first reservation learns the key's strategy and
			// prepares the statements.
			in(func(tx pgx.Tx) error { _, err := reserveTx(tx, uuid.New(), 1); return err })
			id := uuid.New()
			if n := in(func(tx pgx.Tx) error { _, err := reserveTx(tx, id, 1); return err }); n != 1 {
				t.Errorf("a reservation in a caller's transaction took %d round trips, want 1", n)
			}
			in(func(tx pgx.Tx) error {
				h, err := reserveTx(tx, id, 1)
				if err != nil {
					return err
				}
				if !h.Replayed {
					t.Errorf("the checkout's second reservation: %+v, want its hold replayed", h)
				}
				return nil
			})
			in(func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "CREATE TEMP TABLE caller_work (n int)"); err != nil {
					return err
				}
				var ise *holdfast.InsufficientStockError
				short := uuid.New()
				if _, err := reserveTx(tx, short, 2); !errors.As(err, &ise) || ise.Lines[0].Sellable != 1 {
					t.Errorf("2 of the last unit: %v, want an *InsufficientStockError with 1 sellable", err)
				}
				// The caller's transaction is usable, its own work kept,
				// and nothing of the failed reservation is in it.
				if _, err := tx.Exec(ctx, "INSERT INTO caller_work VALUES (1)"); err != nil {
					return err
				}
				var holds int
				if err := tx.QueryRow(ctx, "SELECT count(*) FROM holds WHERE checkout_id = $1", short).Scan(&holds); err != nil {
					return err
				}
				if holds != 0 {
					t.Errorf("the short reservation left %d hold rows in the caller's transaction", holds)
				}
				return nil
			})
			if l := e.level(k); l.Held != 2 {
				t.Errorf("held %d units, want 2", l.Held)
			}
		})
	}
}
