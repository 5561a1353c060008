package main

import (
	"strings"

	"github.com/holdfast/holdfast"
)

// strategies is every allocation strategy, the list flag help and
// validation draw from.
var strategies = holdfast.Strategies()

// strategyNames is "counter, batch, pool or slots".
func strategyNames() string { return namesOf(strategies) }

// namesOf is "a, b or c".
func namesOf(strategies []holdfast.Strategy) string {
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
