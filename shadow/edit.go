package shadow

import (
	"context"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Edit implements holdfast.Engine by forwarding to the holdfast side only:
// the legacy store has no edit, so nothing is written to it or compared.
// In modes legacy and shadow (legacy the truth) an edited hold's lines
// differ between the two sides from then on; edit only shops in mode
// primary or holdfast.
func (e *Engine) Edit(ctx context.Context, p holdfast.EditParams) (*holdfast.Hold, error) {
	return e.hf.Edit(ctx, p)
}

// ClaimLines implements holdfast.Engine by forwarding to the holdfast side
// only: the legacy store has no partial claim, so nothing is written to it
// or compared. Use it for shops in mode primary or holdfast.
func (e *Engine) ClaimLines(ctx context.Context, shop int64, checkout uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	return e.hf.ClaimLines(ctx, shop, checkout, lines)
}
