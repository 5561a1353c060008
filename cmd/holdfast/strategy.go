package main

import (
	"strings"

	"github.com/holdfast/holdfast"
)

// strategies is every allocation strategy, the one list flag help and
// validation draw from. holdfast has no exported list yet; when it gains one
// (holdfast.Strategies()), this should become it.
var strategies = []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyBatch, holdfast.StrategyPool, holdfast.StrategySlots}

// strategyNames is "counter, batch, pool or slots".
func strategyNames() string {
	names := make([]string, len(strategies))
	for i, s := range strategies {
		names[i] = string(s)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// parseStrategy validates a --strategy value; empty is the client's default.
func parseStrategy(s string) (holdfast.Strategy, error) {
	st := holdfast.Strategy(s)
	if s != "" && !st.Valid() {
		return "", usageError("unknown --strategy %q (known: %s)", s, strategyNames())
	}
	return st, nil
}
