package shadow

import (
	"context"
	"fmt"

	"github.com/holdfast/holdfast"
)

// ImportStock implements holdfast.Engine as ChangeStock does: the import
// goes to holdfast in every mode (all or nothing there, its
// compare-and-sets checked against holdfast's stock), then — in every mode
// but holdfast, and not on a replay — each entry is set on the legacy. A
// legacy failure is returned (wrapping holdfast.ErrOutcomeUnknown: the
// import is half applied) with holdfast's result.
func (e *Engine) ImportStock(ctx context.Context, im holdfast.StockImport) (*holdfast.StockImportResult, error) {
	b := e.bind(im.ShopID)
	res, err := e.hf.ImportStock(ctx, im)
	if err != nil || b.mode == ModeHoldfast || res.Replayed {
		return res, err
	}
	for i, en := range im.Entries {
		set := en.Available
		ch := holdfast.StockChange{Key: holdfast.Key{ShopID: im.ShopID, ItemID: en.ItemID, LocationID: en.LocationID},
			Set: &set, Reason: im.Reason, Reference: im.Reference}
		if _, err := e.old.ChangeStock(ctx, ch); err != nil {
			return res, fmt.Errorf("shadow: holdfast imported, the legacy did not or may not have from entry %d on (reconcile the keys): %w: %w", i, holdfast.ErrOutcomeUnknown, err)
		}
	}
	return res, nil
}
