package mysql_test

import (
	"reflect"
	"testing"

	"github.com/holdfast/holdfast"
)

// TestDefaultsAsPostgres: a zero Config means on MySQL what it means on
// PostgreSQL (holdfast.Config.WithDefaults): a key without a strategy of its
// own runs batch, the README's default, not counter.
func TestDefaultsAsPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, holdfast.Config{})
	got, want := e.c.Config(), holdfast.Config{Now: e.c.Config().Now}.WithDefaults()
	got.Logger, got.Observer, want.Logger, want.Observer = nil, nil, nil, nil
	got.Now, want.Now = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mysql defaults differ from holdfast.Config.WithDefaults:\n got %+v\nwant %+v", got, want)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 1}
	e.stock(k, 10)
	if l := e.level(k); l.Strategy != holdfast.StrategyBatch {
		t.Fatalf("a new key's strategy: %q, want batch", l.Strategy)
	}
	e.strategy(k, holdfast.StrategyCounter, 0)
	if l := e.level(k); l.Strategy != holdfast.StrategyCounter || l.Available != 10 {
		t.Fatalf("after SetStrategy counter: %+v", l)
	}
}
