package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// TestBuyerLimitReserveTx: in the caller's transaction a buyer's
// reservation of a limited item needs READ COMMITTED (a REPEATABLE READ
// snapshot could not see the buyer's holds committed meanwhile) and counts
// the holds the same transaction made before; a configured BuyerSecret is
// what the hash is keyed with.
func TestBuyerLimitReserveTx(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	e := newEnv(t, 4, holdfast.Config{BuyerSecret: secret})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	if err := e.c.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: 1, ItemID: 1, Limit: 3}); err != nil {
		t.Fatal(err)
	}
	p := func(q int) holdfast.ReserveParams {
		return holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: q}}, BuyerID: "cust-9"}
	}

	tx, err := e.db.DB.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.ReserveTx(ctx, tx, p(1))
	var ae *holdfast.ArgumentError
	if !errors.As(err, &ae) || ae.Field != "tx" {
		t.Fatalf("REPEATABLE READ: %v, want an *ArgumentError for tx", err)
	}
	_ = tx.Rollback()

	tx, err = e.db.DB.BeginTx(ctx, mysql.TxOptions())
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
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var stored []byte
	if err := e.db.DB.QueryRowContext(ctx, "SELECT buyer_hash FROM holds WHERE shop_id = 1 AND checkout_id = ?", first.CheckoutID[:]).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := holdfast.BuyerHash(secret, 1, "cust-9"); string(stored) != string(want) {
		t.Fatalf("stored hash %x, want HMAC-SHA256 under the configured secret %x", stored, want)
	}
	if _, err := mysql.New(e.db.DB, holdfast.Config{BuyerSecret: []byte("short")}); !errors.As(err, &ae) || ae.Field != "Config.BuyerSecret" {
		t.Fatalf("short secret: %v", err)
	}
	e.checkInvariant()
}
