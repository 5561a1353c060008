package engine

import (
	"slices"
	"testing"
)

// TestTakeStripeAlternates: batches that run one at a time alternate the
// stripes, so one runner alone drains a key's counter rows evenly; a batch
// beside a running one takes the stripe that is free.
func TestTakeStripeAlternates(t *testing.T) {
	var cb combiner
	var got []int
	for range 4 {
		s := cb.takeStripe()
		got = append(got, s)
		cb.stripes[s] = false
	}
	if want := []int{1, 0, 1, 0}; !slices.Equal(got, want) {
		t.Fatalf("stripes of batches one at a time: %v, want %v", got, want)
	}
	a := cb.takeStripe()
	b := cb.takeStripe()
	if a == b {
		t.Fatalf("two running batches share stripe %d", a)
	}
	cb.stripes[b] = false
	if c := cb.takeStripe(); c != b {
		t.Fatalf("beside the batch on stripe %d, a batch took %d, want %d", a, c, b)
	}
}
