package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

const routeImportStock = "import_inventory"

// stockImportRoutes registers PUT /v1/shops/{shop_id}/inventory: many
// keys' stock set in one call, all or nothing, idempotent on import_id.
func (s *Server) stockImportRoutes() {
	s.handle("PUT /v1/shops/{shop_id}/inventory", routeImportStock, routeOpts{body: true, scope: ScopeInventory}, s.importStock)
}

// expectedAvailable reads the optional expected_available member of a stock
// change: the available stock the change expects to replace.
func (o *object) expectedAvailable() (*int, *apiError) {
	v, ok, err := o.int64("expected_available", false, 0, holdfast.AvailableMax)
	if err != nil || !ok {
		return nil, err
	}
	n := int(v)
	return &n, nil
}

// stockChangedAPIError is the 409 stock_changed answer, with the key's
// current available stock.
func stockChangedAPIError(err error) *apiError {
	e := &apiError{Status: http.StatusConflict, Code: CodeStockChanged, cause: err,
		Message: "the key's available stock is not what the change expected; nothing was changed: read it, decide again and send a new change"}
	var ce *holdfast.StockChangedError
	if errors.As(err, &ce) {
		e.StockChanged = ce
		e.Field = "expected_available"
		if ce.Index >= 0 {
			e.Field = fmt.Sprintf("entries[%d].expected_available", ce.Index)
			e.Message = fmt.Sprintf("entry %d (item %d at location %d): available is %d, not the expected %d; nothing of the import was changed", ce.Index, ce.Key.ItemID, ce.Key.LocationID, ce.Current, ce.Expected)
		}
	}
	return e
}

// decodeStockImport decodes {"import_id", "reason", "reference",
// "entries": [{"item_id", "location_id", "available",
// "expected_available"}]}. The entries' bounds and duplicates are the
// engine's to check (one place), except what only JSON can get wrong.
func decodeStockImport(shop int64, body []byte, idemKey string) (holdfast.StockImport, *apiError) {
	im := holdfast.StockImport{ShopID: shop}
	o, err := parseBody(body, "import_id", "reason", "reference", "entries")
	if err != nil {
		return im, err
	}
	if im.ID, err = o.string("import_id", idemKey == "", AdjustmentIDMaxLen); err != nil {
		return im, err
	}
	switch {
	case len(idemKey) > AdjustmentIDMaxLen:
		return im, invalid("Idempotency-Key", "at most %d bytes", AdjustmentIDMaxLen)
	case idemKey != "" && im.ID != "" && idemKey != im.ID:
		return im, invalid("import_id", "differs from the Idempotency-Key header; send one, or the same value in both")
	case idemKey != "":
		im.ID = idemKey
	}
	if im.Reason, err = o.string("reason", true, holdfast.ReasonMaxLen); err != nil {
		return im, err
	}
	if im.Reference, err = o.string("reference", false, holdfast.ReasonMaxLen); err != nil {
		return im, err
	}
	raw, err := o.raw("entries", true)
	if err != nil {
		return im, err
	}
	if jsonType(raw) != "an array" {
		return im, badRequest(CodeWrongType, "entries", "entries must be an array, not %s", jsonType(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return im, badRequest(CodeMalformedJSON, "entries", "invalid array: %s", err.Error())
	}
	if len(items) > holdfast.StockImportEntriesMax {
		return im, invalid("entries", "at most %d entries in one import (got %d); split it", holdfast.StockImportEntriesMax, len(items))
	}
	im.Entries = make([]holdfast.StockImportEntry, len(items))
	for i, item := range items {
		eo, err := parseObject(item, fmt.Sprintf("entries[%d].", i), "item_id", "location_id", "available", "expected_available")
		if err != nil {
			return im, err
		}
		e := &im.Entries[i]
		if e.ItemID, _, err = eo.int64("item_id", true, 1, 1<<63-1); err != nil {
			return im, err
		}
		if e.LocationID, _, err = eo.int64("location_id", true, 1, 1<<63-1); err != nil {
			return im, err
		}
		v, _, err := eo.int64("available", true, 0, holdfast.AvailableMax)
		if err != nil {
			return im, err
		}
		e.Available = int(v)
		if e.ExpectAvailable, err = eo.expectedAvailable(); err != nil {
			return im, err
		}
	}
	return im, nil
}

func (s *Server) importStock(c *call) (int, any, error) {
	im, apiErr := decodeStockImport(c.shop, c.body, c.r.Header.Get("Idempotency-Key"))
	if apiErr != nil {
		return 0, nil, apiErr
	}
	var r *holdfast.StockImportResult
	err := c.do(func(ctx context.Context) (err error) {
		r, err = s.eng.ImportStock(ctx, im)
		if err != nil && ctx.Err() != nil && !errors.Is(err, holdfast.ErrOutcomeUnknown) &&
			(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, holdfast.ErrUnavailable)) {
			// Given up while the import may be committing: the outcome is
			// unknown; a retry with the same import_id answers it.
			err = fmt.Errorf("%w: %w", holdfast.ErrOutcomeUnknown, err)
		}
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.FromStockImportResult(r), nil
}
