package drivertest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// testMergeAttempt: MergeAttempt answers into's hold with the summed
// lines and ends from released with MergedInto; run again it answers
// into's hold Replayed; into absent, it is created with from's expiry; in
// a caller's transaction (a savepoint) the caller's rollback takes the
// merge back; the held units never change.
func testMergeAttempt[TTx comparable](t *testing.T, h Harness[TTx]) {
	in := h.New(t)
	ctx := context.Background()
	var zero TTx
	setStock(t, in, key, 10)
	merge := func(tx TTx, own bool, from, into uuid.UUID) (*holdfast.Hold, error) {
		var got *holdfast.Hold
		err := in.Driver.Attempt(ctx, tx, own, holdfast.OpMerge, func(tx TTx) error {
			var err error
			got, err = in.Driver.MergeAttempt(ctx, tx, own, key.ShopID, from, into)
			return err
		})
		return got, err
	}
	held := func() int {
		t.Helper()
		l, err := in.Engine.Level(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return l.Held
	}
	guest, customer := uuid.New(), uuid.New()
	for id, q := range map[uuid.UUID]int{guest: 2, customer: 3} {
		if _, err := reserve(ctx, in, reservation(id, key, q)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := merge(zero, true, guest, customer)
	if err != nil || got.Replayed || got.CheckoutID != customer || len(got.Lines) != 1 || got.Lines[0].Quantity != 5 || got.Revision != 2 {
		t.Fatalf("merge: %+v %v, want the customer's hold with 5, revision 2", got, err)
	}
	src, err := in.Engine.Hold(ctx, key.ShopID, guest)
	if err != nil || src.Status != holdfast.StatusReleased || src.MergedInto == nil || *src.MergedInto != customer {
		t.Fatalf("source: %+v %v, want released, merged into %s", src, err, customer)
	}
	if again, err := merge(zero, true, guest, customer); err != nil || !again.Replayed || again.Lines[0].Quantity != 5 {
		t.Fatalf("merge again: %+v %v, want the same hold, Replayed", again, err)
	}
	if n := held(); n != 5 {
		t.Fatalf("held %d after the merge, want 5", n)
	}
	// In a caller's transaction, rolled back: nothing stays.
	g2, fresh := uuid.New(), uuid.New()
	if _, err := reserve(ctx, in, reservation(g2, key, 1)); err != nil {
		t.Fatal(err)
	}
	tx, err := in.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	created, err := merge(tx, false, g2, fresh)
	if err != nil || created.CheckoutID != fresh || created.Status != holdfast.StatusHeld || created.Lines[0].Quantity != 1 {
		t.Fatalf("merge into an absent checkout in a caller's transaction: %+v %v", created, err)
	}
	if err := in.End(ctx, tx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Engine.Hold(ctx, key.ShopID, fresh); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("destination after the caller's rollback: %v, want ErrNotFound", err)
	}
	if g, err := in.Engine.Hold(ctx, key.ShopID, g2); err != nil || g.Status != holdfast.StatusHeld {
		t.Fatalf("source after the caller's rollback: %+v %v, want held", g, err)
	}
	if n := held(); n != 6 {
		t.Fatalf("held %d after the rolled-back merge, want 6", n)
	}
}
