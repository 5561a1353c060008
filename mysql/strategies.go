package mysql

import (
	"slices"

	"github.com/holdfast/holdfast"
)

// strategyRow is one allocation strategy as this engine runs it: the one
// place a strategy is declared. Adding one adds a row here, its SQL in
// sql/, and its name to the schema's CHECK (a migration);
// TestStrategiesMatchSchema and TestStrategyTable hold them together.
type strategyRow struct {
	name holdfast.Strategy
	// pooled: the buffer is one row per unit (sql/pool_*.sql), taken with
	// SKIP LOCKED in one round trip for a cart's pool lines, filled up to
	// the key's cap; otherwise it is the key's counter row
	// (sql/take_counter.sql), filled with every sellable unit.
	pooled bool
	// combines: the key's contended one-line reservations from one process
	// join combined batches (combine.go).
	combines bool
}

// strategyTable is this engine's strategies, in holdfast.Strategies'
// order. StrategySlots is not offered (see the package documentation).
var strategyTable = [...]strategyRow{
	{name: holdfast.StrategyCounter},
	{name: holdfast.StrategyBatch, combines: true},
	{name: holdfast.StrategyPool, pooled: true},
}

// strategyOf returns s's row; an unknown name (a row written by a newer
// binary) runs as the counter.
func strategyOf(s holdfast.Strategy) *strategyRow {
	for i := range strategyTable {
		if strategyTable[i].name == s {
			return &strategyTable[i]
		}
	}
	return &strategyTable[0]
}

// Strategies returns the allocation strategies this engine offers. The
// slice is the caller's.
func Strategies() []holdfast.Strategy {
	out := make([]holdfast.Strategy, len(strategyTable))
	for i, row := range strategyTable {
		out[i] = row.name
	}
	return out
}

func supported(s holdfast.Strategy) bool { return slices.Contains(Strategies(), s) }
