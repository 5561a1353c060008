package mysql_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// TestEditTxAndClaimLinesTx: the …Tx twins run in the caller's transaction
// (in a savepoint): rolled back, nothing happened; a refused one leaves the
// caller's transaction usable; committed, the edit and the partial claim
// are there with the caller's own row.
func TestEditTxAndClaimLinesTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0, holdfast.Config{})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 1}
	e.stock(k, 10)
	id := uuid.New()
	line := func(q int) []holdfast.Line { return []holdfast.Line{{ItemID: 42, LocationID: 1, Quantity: q}} }
	if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: line(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.DB.Exec("CREATE TABLE app_orders (checkout BINARY(16) PRIMARY KEY) ENGINE = InnoDB"); err != nil {
		t.Fatal(err)
	}
	edit := holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: line(5)}
	if _, err := e.c.EditTx(ctx, nil, edit); !errors.Is(err, holdfast.ErrInvalidArgument) {
		t.Fatalf("EditTx without a transaction: %v", err)
	}

	tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	if h, err := e.c.EditTx(ctx, tx, edit); err != nil || h.Revision != 2 || h.Lines[0].Quantity != 5 {
		t.Fatalf("EditTx: %+v %v", h, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if h, err := e.c.Hold(ctx, 1, id); err != nil || h.Revision != 1 || h.Lines[0].Quantity != 2 {
		t.Fatalf("after a rolled-back EditTx: %+v %v", h, err)
	}
	if l := e.level(k); l.Held != 2 {
		t.Fatalf("after a rolled-back EditTx: %+v", l)
	}

	tx, err = e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := e.c.EditTx(ctx, tx, holdfast.EditParams{ShopID: 1, CheckoutID: id, Revision: 2, Lines: line(11)}); !errors.Is(err, holdfast.ErrInsufficientStock) {
		t.Fatalf("EditTx past the stock: %v, want ErrInsufficientStock", err)
	}
	if _, err := e.c.EditTx(ctx, tx, edit); err != nil {
		t.Fatalf("EditTx after a refused one: %v", err)
	}
	h, err := e.c.ClaimLinesTx(ctx, tx, 1, id, line(3))
	if err != nil || h.Status != holdfast.StatusClaimed || !slices.Equal(h.Released, line(2)) {
		t.Fatalf("ClaimLinesTx: %+v %v", h, err)
	}
	if _, err := tx.Exec("INSERT INTO app_orders VALUES (?)", id[:]); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if h, err := e.c.Hold(ctx, 1, id); err != nil || h.Status != holdfast.StatusClaimed || h.Revision != 2 || h.Lines[0].Quantity != 3 {
		t.Fatalf("after commit: %+v %v", h, err)
	}
	if l := e.level(k); l.Available != 7 || l.Held != 0 {
		t.Fatalf("after commit: %+v, want 7 available", l)
	}
	e.checkInvariant()
}
