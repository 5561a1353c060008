package pgmove_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestGuardChecksEachShopOfATransaction: the placement guard checks a shop
// once per transaction (migration 25) and remembers only the shop it
// checked, so a transaction that already wrote one shop's rows is still
// refused a fenced shop's, and a savepoint rolled back forgets its check.
// The fences here are written straight into holdfast_shop_fences, without
// the mover's lock, to see what each write checks.
func TestGuardChecksEachShopOfATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 2)
	refused := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "HF001"
	}
	insert := `INSERT INTO inventory_counters (shop_id, inventory_item_id, location_id, slot, units) VALUES ($1, $2, 1, 0, 1)`
	fence := `INSERT INTO holdfast_shop_fences (shop_id, state) VALUES ($1, 'gone')`

	// Shop 1 written, then shop 2 fenced: shop 2's row is refused.
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(3) {
		if _, err := tx.Exec(ctx, insert, int64(1), i+1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, fence, int64(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, insert, int64(2), int64(1)); !refused(err) {
		t.Errorf("a fenced shop's row after another shop's rows in one transaction: %v, want HF001", err)
	}
	_ = tx.Rollback(ctx)

	// Shop 3 checked inside a savepoint rolled back, then fenced: the
	// transaction's next row of shop 3 is checked again and refused.
	tx, err = db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SAVEPOINT s"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, insert, int64(3), int64(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, fence, int64(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, insert, int64(3), int64(2)); !refused(err) {
		t.Errorf("a fenced shop's row after its check was rolled back to a savepoint: %v, want HF001", err)
	}
	_ = tx.Rollback(ctx)
}
