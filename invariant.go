package holdfast

import (
	"fmt"
	"strings"
)

// KeyAccount is one key's accounting as CheckInvariant saw it.
type KeyAccount struct {
	Key
	Available int64 `json:"available"`
	Held      int64 `json:"held"`
	Pooled    int64 `json:"pooled"`
	LedgerSum int64 `json:"ledger_sum"`
	Safety    int64 `json:"safety,omitempty"`
}

// InvariantReport is the result of CheckInvariant.
type InvariantReport struct {
	Keys int `json:"keys"`
	// Violations are keys with pooled + held > available that are not
	// merely over-committed, or whose audit trail does not sum to available.
	Violations []KeyAccount `json:"violations"`
	// OverCommitted are keys whose holds alone exceed available after a
	// stock reduction, with an empty buffer (allowed; nothing more is
	// reserved on them).
	OverCommitted []KeyAccount `json:"over_committed"`
	// Defects are structural: hold lines without a held checkout, held
	// checkouts whose lines differ from their record, keys whose held
	// counts (held_counts) differ from their lines.
	Defects []string `json:"defects"`
	// Preorders are keys whose pre-order accounting does not hold
	// (PreorderBalanced: the companion's available is cap - owed, and
	// held + owed <= cap; preorder.go).
	Preorders []PreorderAccount `json:"preorder_violations,omitempty"`
}

// OK reports whether the database satisfies the invariant (over-committed
// keys allowed).
func (r *InvariantReport) OK() bool {
	return len(r.Violations) == 0 && len(r.Defects) == 0 && len(r.Preorders) == 0
}

func (r *InvariantReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d keys, %d violations, %d over-committed, %d defects", r.Keys, len(r.Violations), len(r.OverCommitted), len(r.Defects))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "\n  violation %+v", v)
	}
	for _, d := range r.Defects {
		fmt.Fprintf(&b, "\n  defect %s", d)
	}
	for _, p := range r.Preorders {
		fmt.Fprintf(&b, "\n  pre-order violation %+v", p)
	}
	return b.String()
}
