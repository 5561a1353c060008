package holdfast

import (
	"fmt"
	"slices"
)

// BundleComponentsMax bounds the components of one bundle
// (Engine.SetBundle): a definition with more is an *ArgumentError naming
// "components".
const BundleComponentsMax = 20

// BundlesPerShopMax bounds the bundles one shop may define: one more is an
// *ArgumentError naming "item_id". Every engine reads a shop's whole set of
// definitions at once (to expand reservations), so the set is bounded.
const BundlesPerShopMax = 1000

// Bundle is a shop's bundle item (a kit): an item id that is not stocked
// itself but stands for Components × their quantities. Reserving a line of
// a bundle reserves every component (the line's quantity × the component's
// quantity) at the line's location (or allocation), all or nothing; the
// hold's lines are the components, so claim, release, expiry, edit, events
// and per-buyer limits apply per component, and a short component names
// itself in the *InsufficientStockError. Its availability is the minimum
// over its components (Engine.Availability).
//
// A bundle is one level deep: a component may not be a bundle, a bundle
// may not be a component of another, nor of itself, and a bundle's item id
// may not have a key of its own (stock, a strategy or safety stock set).
type Bundle struct {
	ShopID int64 `json:"shop_id"`
	ItemID int64 `json:"item_id"`
	// Components are the items one unit of the bundle takes, each once, 1
	// to BundleComponentsMax of them, in the order given.
	Components []BundleComponent `json:"components"`
}

// BundleComponent is one item of a bundle and how many units of it one
// unit of the bundle takes.
type BundleComponent struct {
	ItemID int64 `json:"item_id"`
	// Quantity is at least 1 and at most Config.QuantityMax.
	Quantity int `json:"quantity"`
}

// Validate checks b's shape against cfg's bounds (what needs the database —
// nesting, a stocked bundle id, BundlesPerShopMax — the engine checks in
// SetBundle's transaction). A rejected definition is an *ArgumentError
// naming the field: shop_id, item_id, components, components[i].item_id,
// components[i].quantity.
func (b Bundle) Validate(cfg Config) error {
	cfg = cfg.WithDefaults()
	if b.ShopID <= 0 {
		return NewArgumentError("shop_id", "must be a positive integer")
	}
	if b.ItemID <= 0 {
		return NewArgumentError("item_id", "must be a positive integer")
	}
	switch {
	case len(b.Components) == 0:
		return NewArgumentError("components", "a bundle needs at least one component")
	case len(b.Components) > BundleComponentsMax:
		return NewArgumentError("components", "at most %d components, got %d", BundleComponentsMax, len(b.Components))
	}
	for i, c := range b.Components {
		f := fmt.Sprintf("components[%d]", i)
		switch {
		case c.ItemID <= 0:
			return NewArgumentError(f+".item_id", "must be a positive integer")
		case c.ItemID == b.ItemID:
			return NewArgumentError(f+".item_id", "a bundle cannot be a component of itself")
		case c.Quantity < 1 || c.Quantity > cfg.QuantityMax:
			return NewArgumentError(f+".quantity", "must be between 1 and %d", cfg.QuantityMax)
		}
		if k := slices.IndexFunc(b.Components[:i], func(o BundleComponent) bool { return o.ItemID == c.ItemID }); k >= 0 {
			return NewArgumentError(f+".item_id", "duplicates components[%d] (item %d)", k, c.ItemID)
		}
	}
	return nil
}
