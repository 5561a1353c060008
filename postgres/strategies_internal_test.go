package postgres

import (
	"github.com/holdfast/holdfast"
	"testing"
)

// TestStrategyTable holds the strategy table to the shared vocabulary and
// to this engine's SQL: every strategy has exactly one row, and every row's
// take statement exists.
func TestStrategyTable(t *testing.T) {
	sql := statements.Map()
	seen := map[holdfast.Strategy]bool{}
	for _, row := range strategyTable {
		if seen[row.name] {
			t.Errorf("strategy %q has two rows", row.name)
		}
		seen[row.name] = true
		if !row.name.Valid() {
			t.Errorf("row %q is not a strategy of the vocabulary", row.name)
		}
		if _, ok := sql[row.take]; !ok {
			t.Errorf("strategy %q: take statement sql/%s.sql does not exist", row.name, row.take)
		}
		if row.pooled && row.slotted {
			t.Errorf("strategy %q: a buffer is pool rows or counters, not both", row.name)
		}
	}
	for _, s := range holdfast.Strategies() {
		if !seen[s] {
			t.Errorf("strategy %q has no row in strategyTable", s)
		}
		if got := strategyOf(s); got.name != s {
			t.Errorf("strategyOf(%q) = row %q", s, got.name)
		}
	}
}

func TestStrategyNames(t *testing.T) {
	if got, want := strategyNames(), "counter, batch, pool or slots"; got != want {
		t.Errorf("strategyNames() = %q, want %q", got, want)
	}
}
