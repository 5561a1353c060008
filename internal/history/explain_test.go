package history_test

import (
	"os"
	"testing"

	"github.com/holdfast/holdfast/internal/history"
)

// TestExplainHistory re-checks a history saved by a failed check (the .json
// file named in the failure) and explains where linearization gets stuck:
// HOLDFAST_HISTORY=/tmp/holdfast-history-….json go test -run TestExplainHistory -v ./internal/history/
func TestExplainHistory(t *testing.T) {
	p := os.Getenv("HOLDFAST_HISTORY")
	if p == "" {
		t.Skip("set HOLDFAST_HISTORY to a saved history (.json)")
	}
	ops, err := history.LoadOperations(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + history.Explain(ops))
}
