package drivertest

import (
	"context"
	"errors"
	"testing"

	"github.com/holdfast/holdfast"
)

// testChangeStockCAS: ChangeStockAttempt with an expectation answers a
// *holdfast.StockChangedError with the value under the key's lock when it
// differs, having written nothing but — for an identified change, in an
// attempt the engine commits — the record of that refusal, which a replay
// answers again whatever the stock is by then.
func testChangeStockCAS[TTx comparable](t *testing.T, h Harness[TTx]) {
	in := h.New(t)
	ctx := context.Background()
	var zero TTx
	setStock(t, in, key, 5)
	change := func(ch holdfast.StockChange, commitRefusal bool) (*holdfast.Level, error) {
		var l *holdfast.Level
		var answer error
		err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteAdjust, func(tx TTx) error {
			var err error
			l, err = in.Driver.ChangeStockAttempt(ctx, tx, true, ch)
			answer = err
			if commitRefusal && errors.Is(err, holdfast.ErrStockChanged) {
				return nil
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		return l, answer
	}
	level := func() int {
		t.Helper()
		l, err := in.Engine.Level(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return l.Available
	}
	nine, four, five := 9, 4, 5
	var ce *holdfast.StockChangedError
	if _, err := change(holdfast.StockChange{Key: key, Set: &nine, Reason: "sync", ExpectAvailable: &four}, false); !errors.As(err, &ce) || ce.Current != 5 || ce.Expected != 4 {
		t.Fatalf("stale expectation: %v, want a *StockChangedError with current 5", err)
	}
	if got := level(); got != 5 {
		t.Fatalf("a refused change moved available to %d", got)
	}
	id := holdfast.StockChange{Key: key, Set: &nine, Reason: "sync", ID: "d-1", ExpectAvailable: &four}
	if _, err := change(id, true); !errors.As(err, &ce) || ce.Current != 5 {
		t.Fatalf("identified stale expectation: %v", err)
	}
	setStock(t, in, key, 4)
	if _, err := change(id, true); !errors.As(err, &ce) || ce.Current != 5 || ce.Expected != 4 {
		t.Fatalf("identified refusal replayed: %v, want its first answer (current 5)", err)
	}
	if got := level(); got != 4 {
		t.Fatalf("a replayed refusal moved available to %d", got)
	}
	l, err := change(holdfast.StockChange{Key: key, Delta: 1, Reason: "restock", ExpectAvailable: &four}, false)
	if err != nil || l.Available != 5 {
		t.Fatalf("matching expectation: %+v %v", l, err)
	}
	// In a caller's transaction (a savepoint) the check holds as well, and
	// the caller's rollback takes the change back.
	tx, err := in.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = in.Driver.Attempt(ctx, tx, false, holdfast.RouteAdjust, func(tx TTx) error {
		_, err := in.Driver.ChangeStockAttempt(ctx, tx, false, holdfast.StockChange{Key: key, Set: &nine, Reason: "sync", ExpectAvailable: &five})
		return err
	})
	if err != nil {
		t.Fatalf("matching expectation in a caller's transaction: %v", err)
	}
	if err := in.End(ctx, tx, false); err != nil {
		t.Fatal(err)
	}
	if got := level(); got != 5 {
		t.Fatalf("after the caller's rollback: available %d, want 5", got)
	}
}
