package enginetest

import (
	"testing"

	"github.com/holdfast/holdfast"
)

// TestClaimJudgeCatches feeds the claim oracle wrong answers, each of
// which it must reject, and right ones, which it must accept.
func TestClaimJudgeCatches(t *testing.T) {
	t.Parallel()
	line := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}
	lv := func(avail, held int) []holdfast.Level {
		return []holdfast.Level{{Available: avail, Held: held, Sellable: max(0, avail-held)}}
	}
	ok := &holdfast.Hold{}
	short := &holdfast.ExpiredError{Lines: []holdfast.Shortfall{{ItemID: 1, LocationID: 1, Requested: 2, Sellable: 1}}}
	for _, tc := range []struct {
		name  string
		c     claimCase
		right bool
	}{
		{"held claimed", claimCase{status: "held", statusAfter: "claimed", before: lv(5, 2), after: lv(3, 0), h: ok}, true},
		{"held refused as over-committed", claimCase{status: "held", statusAfter: "held", before: lv(5, 2), after: lv(5, 2), err: holdfast.ErrOverCommitted}, false},
		{"held refused as expired", claimCase{status: "held", statusAfter: "held", before: lv(5, 2), after: lv(5, 2), err: short}, false},
		{"held claimed without deducting", claimCase{status: "held", statusAfter: "claimed", before: lv(5, 2), after: lv(5, 0), h: ok}, false},
		{"over-committed refused", claimCase{status: "held", statusAfter: "held", before: lv(1, 2), after: lv(1, 2), err: holdfast.ErrOverCommitted}, true},
		{"over-committed claimed", claimCase{status: "held", statusAfter: "claimed", before: lv(1, 2), after: lv(-1, 0), h: ok}, false},
		{"late claim taken", claimCase{status: "expired", statusAfter: "claimed", before: lv(5, 2), after: lv(3, 2), h: ok}, true},
		{"late claim refused while sellable", claimCase{status: "expired", statusAfter: "expired", before: lv(5, 2), after: lv(5, 2), err: short}, false},
		{"late claim refused rightly", claimCase{status: "expired", statusAfter: "expired", before: lv(5, 4), after: lv(5, 4), err: short}, true},
		{"late claim refused with a wrong shortfall", claimCase{status: "expired", statusAfter: "expired", before: lv(5, 5), after: lv(5, 5), err: short}, false},
		{"late claim taken while short", claimCase{status: "expired", statusAfter: "claimed", before: lv(5, 4), after: lv(3, 4), h: ok}, false},
		{"released claimed", claimCase{status: "released", statusAfter: "claimed", before: lv(5, 0), after: lv(3, 0), h: ok}, false},
		{"claimed twice, not replayed", claimCase{status: "claimed", statusAfter: "claimed", before: lv(5, 0), after: lv(3, 0), h: ok}, false},
	} {
		tc.c.lines = line
		kind, wrong := tc.c.judge()
		if (wrong == "") != tc.right {
			t.Errorf("%s (%s): judged %q, want right=%v", tc.name, kind, wrong, tc.right)
		}
	}
}
