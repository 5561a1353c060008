package mysql

import (
	"slices"

	"github.com/holdfast/holdfast"
)

// strategies are the allocation strategies this engine offers, in
// holdfast.Strategies' order: StrategySlots is not offered (see the package
// documentation).
var strategies = [...]holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyBatch, holdfast.StrategyPool}

// Strategies returns the allocation strategies this engine offers. The
// slice is the caller's.
func Strategies() []holdfast.Strategy { return slices.Clone(strategies[:]) }

func supported(s holdfast.Strategy) bool { return slices.Contains(strategies[:], s) }
