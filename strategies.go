package holdfast

import "slices"

// strategies is every allocation strategy, in the order lists show them
// (flag help, the bench, the demo): the one list to extend when a strategy
// is added. The PostgreSQL engine offers each; another engine offers a
// subset and says which (mysql.Strategies).
var strategies = [...]Strategy{StrategyCounter, StrategyBatch, StrategyPool, StrategySlots}

// Strategies returns every allocation strategy, in a stable order. The
// slice is the caller's.
func Strategies() []Strategy { return slices.Clone(strategies[:]) }
