package holdfast

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

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

// ValidateStockChange checks a stock change's key, delta, reason and id, as
// every engine does before it writes anything.
func ValidateStockChange(ch StockChange) error {
	err := ValidateKey(ch.Key)
	switch {
	case err != nil:
		return err
	case ch.Reason == "":
		return NewArgumentError("reason", "required")
	case len(ch.Reason) > ReasonMaxLen:
		return NewArgumentError("reason", "at most %d bytes", ReasonMaxLen)
	case len(ch.Reference) > ReasonMaxLen:
		return NewArgumentError("reference", "at most %d bytes", ReasonMaxLen)
	case ch.Set != nil && (*ch.Set < 0 || *ch.Set > AvailableMax):
		return NewArgumentError("available", "must be between 0 and %d", AvailableMax)
	case ch.Set == nil && (ch.Delta < -AvailableMax || ch.Delta > AvailableMax):
		return NewArgumentError("delta", "must be between %d and %d", -AvailableMax, AvailableMax)
	case len(ch.ID) > StockChangeIDMaxLen:
		return NewArgumentError("id", "at most %d bytes", StockChangeIDMaxLen)
	case !utf8.ValidString(ch.ID) || strings.ContainsFunc(ch.ID, unicode.IsControl):
		return NewArgumentError("id", "must be UTF-8 text without control characters")
	}
	return nil
}
