package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
)

// TestClientStockCAS: a compare-and-set change and an import through the
// client answer as the library does: the level, or an error matching
// holdfast.ErrStockChanged that errors.As finds as the
// *holdfast.StockChangedError with the key's current stock.
func TestClientStockCAS(t *testing.T) {
	t.Parallel()
	_, url, key, _ := server(t)
	c := client.New(url, key)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}
	five, three := 5, 3
	if l, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &five, Reason: "sync", ExpectAvailable: new(int)}); err != nil || l.Available != 5 {
		t.Fatalf("expect 0 of a new key: %+v %v", l, err)
	}
	_, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 1, Reason: "restock", ExpectAvailable: &three})
	var ce *holdfast.StockChangedError
	if !errors.Is(err, holdfast.ErrStockChanged) || !errors.As(err, &ce) || ce.Key != k || ce.Current != 5 || ce.Expected != 3 || ce.Index != -1 {
		t.Fatalf("stale change: %v (%+v)", err, ce)
	}
	im := holdfast.StockImport{ShopID: 1, ID: "erp-1", Reason: "sync", Entries: []holdfast.StockImportEntry{
		{ItemID: 8, LocationID: 1, Available: 2},
		{ItemID: 7, LocationID: 1, Available: 9, ExpectAvailable: &three},
	}}
	_, err = c.ImportStock(ctx, im)
	if !errors.As(err, &ce) || ce.Index != 1 || ce.Current != 5 || ce.Key != k {
		t.Fatalf("stale import: %v (%+v)", err, ce)
	}
	im.Entries[1].ExpectAvailable = &five
	r, err := c.ImportStock(ctx, im)
	if err != nil || r.Replayed || len(r.Levels) != 2 || r.Levels[0].Available != 2 || r.Levels[1].Available != 9 {
		t.Fatalf("import: %+v %v", r, err)
	}
	if r, err := c.ImportStock(ctx, im); err != nil || !r.Replayed {
		t.Fatalf("import retried: %+v %v", r, err)
	}
}
