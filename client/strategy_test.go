package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/client"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres/pgstore"
)

// TestClientSetStrategy: an admin key sets a key's strategy and pool cap;
// a shop key is refused, an unknown strategy names its field.
func TestClientSetStrategy(t *testing.T) {
	t.Parallel()
	hc, url, key, _ := server(t)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 9, LocationID: 1}
	if _, err := hc.Adjust(ctx, k, 10, "test", ""); err != nil {
		t.Fatal(err)
	}
	admin, _, err := httpapi.CreateKey(ctx, pgstore.Service(hc.Pool()), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	l, err := client.New(url, admin).SetStrategy(ctx, k, holdfast.StrategyPool, 3)
	if err != nil || l.Strategy != holdfast.StrategyPool || l.Pooled != 3 || l.Available != 10 || l.Key != k {
		t.Fatalf("SetStrategy pool 3: %+v %v", l, err)
	}
	var ae *client.Error
	if _, err := client.New(url, key).SetStrategy(ctx, k, holdfast.StrategyCounter, 0); !errors.As(err, &ae) || ae.Status != 403 {
		t.Fatalf("a shop key: %v", err)
	}
	if _, err := client.New(url, admin).SetStrategy(ctx, k, "fifo", 0); !errors.As(err, &ae) || !errors.Is(err, holdfast.ErrInvalidArgument) || ae.Field != "strategy" {
		t.Fatalf("unknown strategy: %v", err)
	}
	if lv, err := hc.Level(ctx, k); err != nil || lv.Strategy != holdfast.StrategyPool {
		t.Fatalf("level after refusals: %+v %v", lv, err)
	}
}
