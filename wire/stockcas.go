package wire

import "github.com/holdfast/holdfast"

// StockChanged is a compare-and-set stock change's refusal on the wire
// (stock_changed): the key, what the change expected and what the key's
// available stock is. Index is the refused entry of an import (absent for
// a single change).
type StockChanged struct {
	ItemID            int64 `json:"item_id"`
	LocationID        int64 `json:"location_id"`
	ExpectedAvailable int   `json:"expected_available"`
	CurrentAvailable  int   `json:"current_available"`
	Index             *int  `json:"index,omitempty"`
}

// FromStockChanged is e on the wire.
func FromStockChanged(e *holdfast.StockChangedError) *StockChanged {
	w := &StockChanged{ItemID: e.Key.ItemID, LocationID: e.Key.LocationID, ExpectedAvailable: e.Expected, CurrentAvailable: e.Current}
	if e.Index >= 0 {
		i := e.Index
		w.Index = &i
	}
	return w
}

// StockChangedError is w as the engine's error for shop.
func (w *StockChanged) StockChangedError(shop int64) *holdfast.StockChangedError {
	e := &holdfast.StockChangedError{Key: holdfast.Key{ShopID: shop, ItemID: w.ItemID, LocationID: w.LocationID},
		Expected: w.ExpectedAvailable, Current: w.CurrentAvailable, Index: -1}
	if w.Index != nil {
		e.Index = *w.Index
	}
	return e
}

// StockImportEntry is one entry of PUT /v1/shops/{shop_id}/inventory.
type StockImportEntry struct {
	ItemID            int64 `json:"item_id"`
	LocationID        int64 `json:"location_id"`
	Available         int   `json:"available"`
	ExpectedAvailable *int  `json:"expected_available,omitempty"`
}

// StockImport is the body of PUT /v1/shops/{shop_id}/inventory.
type StockImport struct {
	ImportID  string             `json:"import_id"`
	Reason    string             `json:"reason"`
	Reference string             `json:"reference,omitempty"`
	Entries   []StockImportEntry `json:"entries"`
}

// StockImportResult is its answer: the levels in the entries' order.
type StockImportResult struct {
	ImportID string  `json:"import_id"`
	Replayed bool    `json:"replayed"`
	Levels   []Level `json:"levels"`
}

// FromStockImportResult is r on the wire.
func FromStockImportResult(r *holdfast.StockImportResult) StockImportResult {
	w := StockImportResult{ImportID: r.ID, Replayed: r.Replayed, Levels: make([]Level, len(r.Levels))}
	for i := range r.Levels {
		w.Levels[i] = FromLevel(&r.Levels[i])
	}
	return w
}
