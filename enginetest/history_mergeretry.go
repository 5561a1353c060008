package enginetest

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// mergeRetryRounds and mergeRetryCalls: testMergeRetryRace's rounds and
// the concurrent calls of one merge in each.
const (
	mergeRetryRounds = 15
	mergeRetryCalls  = 3
)

// testMergeRetryRace: the same merge sent several times at once (a client
// retrying a merge whose first call is still running) into an absent
// destination whose checkout id sorts before the source's (the attempt
// looks at the destination's row first): one call creates the destination,
// every other answers it Replayed — none answers ErrNotFound for a source
// that exists (found by the history test: a call that read the absent
// destination, then waited for the source's row lock, answered "not found"
// once the first call had merged).
func testMergeRetryRace(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: 2 * mergeRetryCalls})
	k := key(1, 1)
	e.stock(k, 100)
	for r := range mergeRetryRounds {
		guest := e.reserveTTL(1, one(1, 1), time.Hour, "")
		into := uuid.New()
		for bytes.Compare(into[:], guest[:]) >= 0 {
			into = uuid.New()
		}
		var wg sync.WaitGroup
		got := make([]*holdfast.Hold, mergeRetryCalls)
		errs := make([]error, mergeRetryCalls)
		for i := range mergeRetryCalls {
			wg.Add(1)
			go func() { defer wg.Done(); got[i], errs[i] = e.merge(1, guest, into) }()
		}
		wg.Wait()
		created := 0
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: call %d of the same merge into an absent checkout: %v (answers %v)", r, i, err, errs)
			}
			if !slices.Equal(got[i].Lines, one(1, 1)) || got[i].CheckoutID != into {
				t.Fatalf("round %d: call %d answered %+v, want the destination holding the source's line", r, i, got[i])
			}
			if !got[i].Replayed {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("round %d: %d calls of one merge answered not Replayed, want 1", r, created)
		}
		if _, err := e.e.Release(ctxb(), 1, into); err != nil {
			t.Fatalf("round %d: release the destination: %v", r, err)
		}
	}
	e.assertSellable(k, 100)
}
