package holdfast_test

import (
	"encoding/hex"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// TestVerifyDrop: a drawn drop whose ranks follow the seed verifies; a
// swapped rank, another seed or a seed that is not the committed one does
// not.
func TestVerifyDrop(t *testing.T) {
	seed := []byte("0123456789abcdef0123456789abcdef")
	tickets := []string{"aa", "bb", "cc", "dd", "ee"}
	order := holdfast.DropOrder(seed, tickets)
	d := &holdfast.Drop{State: holdfast.DropDrawn, Seed: hex.EncodeToString(seed), Commitment: holdfast.DropCommitment(seed)}
	for pos, i := range order {
		d.Entrants = append(d.Entrants, holdfast.DropEntrant{Rank: pos + 1, CheckoutID: uuid.New(), Ticket: tickets[i]})
	}
	if err := holdfast.VerifyDrop(d); err != nil {
		t.Fatalf("honest drop: %v", err)
	}
	swapped := *d
	swapped.Entrants = append([]holdfast.DropEntrant(nil), d.Entrants...)
	swapped.Entrants[0].Rank, swapped.Entrants[1].Rank = 2, 1
	if holdfast.VerifyDrop(&swapped) == nil {
		t.Fatal("swapped ranks verified")
	}
	other := *d
	other.Seed = hex.EncodeToString([]byte("another seed, not the committed"))
	if holdfast.VerifyDrop(&other) == nil {
		t.Fatal("a seed other than the committed one verified")
	}
	recommitted := other
	s, _ := hex.DecodeString(other.Seed)
	recommitted.Commitment = holdfast.DropCommitment(s)
	if holdfast.VerifyDrop(&recommitted) == nil && !sameOrder(holdfast.DropOrder(s, tickets), order) {
		t.Fatal("ranks of one seed verified under another")
	}
}

func sameOrder(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
