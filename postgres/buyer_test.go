package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
)

// TestBuyerLimitReserveTx: in the caller's transaction a buyer's
// reservation of a limited item needs READ COMMITTED (a REPEATABLE READ
// snapshot could not see the buyer's holds committed meanwhile) and counts
// the holds the same transaction made before; a configured BuyerSecret is
// what the hash is keyed with.
func TestBuyerLimitReserveTx(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	e := newEnv(t, holdfast.Config{BuyerSecret: secret}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	if err := e.c.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: 1, ItemID: 1, Limit: 3}); err != nil {
		t.Fatal(err)
	}
	p := func(q int) holdfast.ReserveParams {
		return holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one(1, q), BuyerID: "cust-9"}
	}

	tx, err := e.db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.ReserveTx(ctx, tx, p(1))
	var ae *holdfast.ArgumentError
	if !errors.As(err, &ae) || ae.Field != "tx" {
		t.Fatalf("REPEATABLE READ: %v, want an *ArgumentError for tx", err)
	}
	_ = tx.Rollback(ctx)

	tx, err = e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := p(2)
	if _, err := e.c.ReserveTx(ctx, tx, first); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.ReserveTx(ctx, tx, p(2))
	var ble *holdfast.BuyerLimitError
	if !errors.As(err, &ble) || ble.Held != 2 || ble.Limit != 3 {
		t.Fatalf("second reservation in the same transaction: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var stored []byte
	if err := e.db.Pool.QueryRow(ctx, "SELECT buyer_hash FROM holds WHERE shop_id = 1 AND checkout_id = $1", first.CheckoutID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := holdfast.BuyerHash(secret, 1, "cust-9"); string(stored) != string(want) {
		t.Fatalf("stored hash %x, want HMAC-SHA256 under the configured secret %x", stored, want)
	}
	if _, err := postgres.New(e.db.Pool, holdfast.Config{BuyerSecret: []byte("short")}); !errors.As(err, &ae) || ae.Field != "Config.BuyerSecret" {
		t.Fatalf("short secret: %v", err)
	}
}

// TestReserveTxPoolExact: ReserveTx runs on its caller's connection and
// takes no second one, with as many concurrent callers' transactions as
// the pool has connections, on a fresh client (issue 24 item 3): the buyer
// secret was read at New, not inside the caller's transaction.
func TestReserveTxPoolExact(t *testing.T) {
	t.Parallel()
	const n = 4
	e := newEnv(t, holdfast.Config{}, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for item := int64(1); item <= 2; item++ {
		e.stock(holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, 100)
		if err := e.c.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: 1, ItemID: item, Limit: 5}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := postgres.New(e.db.Pool, holdfast.Config{}) // after a restart: nothing cached
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = func() error {
				tx, err := e.db.Pool.Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(context.WithoutCancel(ctx))
				if _, err := c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), BuyerID: fmt.Sprintf("tx-buyer-%d", i),
					Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 1}}}); err != nil {
					return err
				}
				return tx.Commit(ctx)
			}()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d of %d on a pool of %d: %v", i, n, n, err)
		}
	}
}
