package holdfast

import ()

// ReasonMaxLen bounds an adjustment's reason and reference.
const ReasonMaxLen = 500

// StockChangeIDMaxLen bounds a stock change's idempotency id, in bytes.
const StockChangeIDMaxLen = 128

// ValidateKey checks a key's ids are positive.
func ValidateKey(k Key) error {
	switch {
	case k.ShopID <= 0:
		return NewArgumentError("shop_id", "must be a positive integer")
	case k.ItemID <= 0:
		return NewArgumentError("item_id", "must be a positive integer")
	case k.LocationID <= 0:
		return NewArgumentError("location_id", "must be a positive integer")
	}
	return nil
}
