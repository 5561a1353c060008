package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestImportStockTx: an import in the caller's transaction commits and
// rolls back with it; a refused entry there fails the import and leaves the
// caller's transaction usable.
func TestImportStockTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 0)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	im := holdfast.StockImport{ShopID: 1, ID: "tx-1", Reason: "sync", Entries: []holdfast.StockImportEntry{{ItemID: 1, LocationID: 1, Available: 7}}}
	for _, commit := range []bool{false, true} {
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stale := 3
		bad := holdfast.StockImport{ShopID: 1, ID: "tx-bad", Reason: "sync", Entries: []holdfast.StockImportEntry{{ItemID: 1, LocationID: 1, Available: 1, ExpectAvailable: &stale}}}
		if _, err := c.ImportStockTx(ctx, tx, bad); !errors.Is(err, holdfast.ErrStockChanged) {
			t.Fatalf("stale import in a transaction: %v", err)
		}
		if r, err := c.ImportStockTx(ctx, tx, im); err != nil || r.Replayed || r.Levels[0].Available != 7 {
			t.Fatalf("import in a transaction: %+v %v", r, err)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.Level(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 0, true: 7}[commit]; l.Available != want {
			t.Fatalf("commit %v: available %d, want %d", commit, l.Available, want)
		}
	}
	if r, err := c.ImportStock(ctx, im); err != nil || !r.Replayed {
		t.Fatalf("the committed import retried: %+v %v", r, err)
	}
}
