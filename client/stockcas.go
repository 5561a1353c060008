package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// ImportStock sets many keys' available stock of one shop in one call (PUT
// /v1/shops/{shop_id}/inventory): all or nothing, idempotent on im.ID, so a
// retry is safe and answers the first outcome (Replayed). An entry's
// ExpectAvailable that does not match refuses the whole import: the error
// matches holdfast.ErrStockChanged and its *Error's StockChanged names the
// entry (Index) and the key's current available stock.
func (c *Client) ImportStock(ctx context.Context, im holdfast.StockImport) (*holdfast.StockImportResult, error) {
	body := wire.StockImport{ImportID: im.ID, Reason: im.Reason, Reference: im.Reference, Entries: make([]wire.StockImportEntry, len(im.Entries))}
	for i, e := range im.Entries {
		body.Entries[i] = wire.StockImportEntry{ItemID: e.ItemID, LocationID: e.LocationID, Available: e.Available, ExpectedAvailable: e.ExpectAvailable}
	}
	var out wire.StockImportResult
	if _, err := c.do(ctx, http.MethodPut, fmt.Sprintf("/v1/shops/%d/inventory", im.ShopID), body, &out, true); err != nil {
		return nil, withShop(err, im.ShopID)
	}
	r := &holdfast.StockImportResult{ID: out.ImportID, Replayed: out.Replayed, Levels: make([]holdfast.Level, len(out.Levels))}
	for i := range out.Levels {
		r.Levels[i] = *out.Levels[i].Level()
	}
	return r, nil
}

// withShop fills the shop into a stock_changed answer's key (the wire
// names the item and location only).
func withShop(err error, shop int64) error {
	var e *Error
	if errors.As(err, &e) && e.StockChanged != nil {
		e.StockChanged.Key.ShopID = shop
	}
	return err
}

// As lets errors.As find a stock_changed answer's
// *holdfast.StockChangedError, as the library answers it.
func (e *Error) As(target any) bool {
	if t, ok := target.(**holdfast.StockChangedError); ok && e.StockChanged != nil {
		*t = e.StockChanged
		return true
	}
	return false
}
