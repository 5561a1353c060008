package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/holdfast/holdfast"
)

// Bundles (issue #30 item 1): a shop's bundle items, defined as components
// × quantities. Reserving a bundle goes through the ordinary reserve
// route: the engine expands its line into its components.

// Route names of bundles.
const (
	routeSetBundle    = "set_bundle"
	routeGetBundle    = "get_bundle"
	routeDeleteBundle = "delete_bundle"
)

func (s *Server) bundleRoutes() {
	const path = "/v1/shops/{shop_id}/bundles/{item_id}"
	s.handle("PUT "+path, routeSetBundle, routeOpts{body: true, scope: ScopeInventory}, s.setBundle)
	s.handle("GET "+path, routeGetBundle, routeOpts{}, s.getBundle)
	s.handle("DELETE "+path, routeDeleteBundle, routeOpts{optional: true, scope: ScopeInventory}, s.deleteBundle)
}

// decodeBundle reads PUT …/bundles/{item_id}'s body: {"components":
// [{"item_id": …, "quantity": …}, …]}. Bounds beyond the shape (how many,
// duplicates, nesting) are the engine's, answered with the same fields.
func decodeBundle(body []byte, shop, item int64) (holdfast.Bundle, *apiError) {
	b := holdfast.Bundle{ShopID: shop, ItemID: item}
	o, apiErr := parseBody(body, "components")
	if apiErr != nil {
		return b, apiErr
	}
	raw, apiErr := o.raw("components", true)
	if apiErr != nil {
		return b, apiErr
	}
	if jsonType(raw) != "an array" {
		return b, badRequest(CodeWrongType, "components", "components must be an array, not %s", jsonType(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return b, badRequest(CodeMalformedJSON, "components", "invalid array: %s", err.Error())
	}
	if len(items) > holdfast.BundleComponentsMax {
		return b, invalid("components", "at most %d components, got %d", holdfast.BundleComponentsMax, len(items))
	}
	for i, it := range items {
		co, apiErr := parseObject(it, fmt.Sprintf("components[%d].", i), "item_id", "quantity")
		if apiErr != nil {
			return b, apiErr
		}
		id, _, apiErr := co.int64("item_id", true, 1, 1<<63-1)
		if apiErr != nil {
			return b, apiErr
		}
		q, _, apiErr := co.int64("quantity", true, 1, holdfast.QuantityLimit)
		if apiErr != nil {
			return b, apiErr
		}
		b.Components = append(b.Components, holdfast.BundleComponent{ItemID: id, Quantity: int(q)})
	}
	return b, nil
}

func (s *Server) setBundle(c *call) (int, any, error) {
	item, apiErr := c.item()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	b, apiErr := decodeBundle(c.body, c.shop, item)
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if err := c.do(func(ctx context.Context) error { return s.eng.SetBundle(ctx, b) }); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, b, nil
}

func (s *Server) getBundle(c *call) (int, any, error) {
	item, apiErr := c.item()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	var b *holdfast.Bundle
	err := c.do(func(ctx context.Context) (err error) {
		b, err = s.eng.Bundle(ctx, c.shop, item)
		return err
	})
	if errors.Is(err, holdfast.ErrNotFound) {
		return 0, nil, &apiError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "the item is not a bundle", cause: err}
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, b, nil
}

func (s *Server) deleteBundle(c *call) (int, any, error) {
	item, apiErr := c.item()
	if apiErr != nil {
		return 0, nil, apiErr
	}
	if apiErr := decodeEmpty(c.body); apiErr != nil {
		return 0, nil, apiErr
	}
	if err := c.do(func(ctx context.Context) error { return s.eng.DeleteBundle(ctx, c.shop, item) }); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"shop_id": c.shop, "item_id": item, "deleted": true}, nil
}
