package mysql

import (
	"testing"

	"github.com/holdfast/holdfast"
)

// TestStrategyTable holds the strategy table to the shared vocabulary:
// every row names a strategy once, and strategyOf finds each.
func TestStrategyTable(t *testing.T) {
	seen := map[holdfast.Strategy]bool{}
	for _, row := range strategyTable {
		if seen[row.name] || !row.name.Valid() {
			t.Errorf("row %q: a duplicate, or not a strategy of the vocabulary", row.name)
		}
		seen[row.name] = true
		if got := strategyOf(row.name); got.name != row.name {
			t.Errorf("strategyOf(%q) = row %q", row.name, got.name)
		}
	}
	if !strategyOf(holdfast.StrategyPool).pooled || !strategyOf(holdfast.StrategyBatch).combines {
		t.Error("pool must be pooled and batch must combine")
	}
}
