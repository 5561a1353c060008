package shadow

import (
	"context"

	"github.com/holdfast/holdfast"
)

// Holds lists a page of a shop's holds from the holdfast side only,
// whatever the shop's mode: the legacy store has no listing, and a reader
// (the API, the console) wants holdfast's own records.
func (e *Engine) Holds(ctx context.Context, q holdfast.HoldQuery) (*holdfast.HoldPage, error) {
	return e.hf.Holds(ctx, q)
}

// Ledger lists a page of a key's ledger from the holdfast side only (the
// legacy store keeps none).
func (e *Engine) Ledger(ctx context.Context, q holdfast.LedgerQuery) (*holdfast.LedgerPage, error) {
	return e.hf.Ledger(ctx, q)
}

// Keys lists a shop's keys by activity from the holdfast side only, with
// holdfast's levels.
func (e *Engine) Keys(ctx context.Context, q holdfast.KeyQuery) ([]holdfast.Level, error) {
	return e.hf.Keys(ctx, q)
}
