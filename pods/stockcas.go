package pods

import (
	"context"

	"github.com/holdfast/holdfast"
)

// ImportStock implements holdfast.Engine on the shop's pod.
func (r *Router) ImportStock(ctx context.Context, im holdfast.StockImport) (*holdfast.StockImportResult, error) {
	return via(r, ctx, im.ShopID, true, func(e holdfast.Engine) (*holdfast.StockImportResult, error) { return e.ImportStock(ctx, im) })
}
