package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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

// TestReserveTxPoolExact: with as many concurrent callers' transactions as
// the pool has connections, on a fresh client (issue 24 item 3), no …Tx
// call wedges the pool. Buyer lock rows are made on the caller's connection;
// the one statement that needs a second connection, the isolation check's
// probe (requireReadCommitted), waits at most mysql.ProbeConnWait for it and
// then answers ErrUnavailable, which the caller may retry: every call ends
// well before the test's deadline, committed or ErrUnavailable.
func TestReserveTxPoolExact(t *testing.T) {
	t.Parallel()
	const n = 4
	e := newEnv(t, n, holdfast.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for item := int64(1); item <= 2; item++ {
		e.stock(holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, 100)
		if err := e.c.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: 1, ItemID: item, Limit: 5}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := mysql.New(e.db.DB, holdfast.Config{}) // after a restart: nothing cached
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = func() error {
				tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if _, err := c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), BuyerID: fmt.Sprintf("tx-buyer-%d", i),
					Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}, {ItemID: 2, LocationID: 1, Quantity: 1}}}); err != nil {
					return err
				}
				return tx.Commit()
			}()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, holdfast.ErrUnavailable) {
			t.Errorf("caller %d of %d on a pool of %d: %v, want a hold or ErrUnavailable", i, n, n, err)
		}
		if ctx.Err() != nil {
			t.Errorf("caller %d of %d on a pool of %d: ran into the test's deadline (a wedged pool): %v", i, n, n, err)
		}
	}
	e.checkInvariant()
}

// TestBuyerLocksPurged: the maintenance purge deletes the buyer_locks rows
// of buyers who have no hold of the shop left on record, in batches of at
// most Config.SweepBatch, and never one a transaction holds: a
// reservation's lock row stays while it runs (issue 24 item 6).
func TestBuyerLocksPurged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6, holdfast.Config{OutcomeRetention: time.Hour, SweepBatch: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 100)
	if err := e.c.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: 1, ItemID: 1, Limit: 5}); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		var n int
		if err := e.db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM buyer_locks").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	reserve := func(buyer string) uuid.UUID {
		t.Helper()
		id := uuid.New()
		if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, BuyerID: buyer, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	for i := range 5 {
		id := reserve(fmt.Sprintf("gone-%d", i))
		if _, err := e.c.Release(ctx, 1, id); err != nil {
			t.Fatal(err)
		}
	}
	reserve("active")
	if n := count(); n != 6 {
		t.Fatalf("%d buyer lock rows after 6 buyers' reservations, want 6", n)
	}
	// The released holds' outcomes pass the retention and are purged; then
	// their buyers' lock rows, two per batch — but for the one a
	// reservation in flight holds (a returning buyer's).
	e.clock.Advance(2 * time.Hour)
	tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), BuyerID: "gone-0", Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		before := count()
		if _, err := e.c.PurgeOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if after := count(); before-after > 2 {
			t.Fatalf("purge %d deleted %d buyer lock rows, more than the batch of 2", i, before-after)
		}
	}
	if n := count(); n != 2 {
		t.Fatalf("%d buyer lock rows after the purges, want 2 (the active buyer's and the one the reservation in flight holds)", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("the in-flight reservation's transaction: %v", err)
	}
	var have int
	if err := e.db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM buyer_locks bl JOIN holds h ON h.shop_id = bl.shop_id AND h.buyer_hash = bl.buyer_hash").Scan(&have); err != nil {
		t.Fatal(err)
	}
	if have != 2 {
		t.Fatalf("%d lock rows belong to buyers with holds, want 2", have)
	}
	e.checkInvariant()
}
