package engine

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/holdfast/holdfast"
)

// The validation of the operations' arguments that only the engine needs
// (moved from the root package, which keeps the user's vocabulary).

// validateEventsArgs checks the arguments of Events for every engine and
// returns the page size to use (limit 0 means holdfast.EventsLimitDefault).
func validateEventsArgs(shopID, after int64, limit int) (int, error) {
	switch {
	case shopID <= 0:
		return 0, holdfast.NewArgumentError("shop_id", "must be positive")
	case after < 0:
		return 0, holdfast.NewArgumentError("after", "must not be negative")
	case limit < 0 || limit > holdfast.EventsLimitMax:
		return 0, holdfast.NewArgumentError("limit", "must be between 1 and %d (0: %d)", holdfast.EventsLimitMax, holdfast.EventsLimitDefault)
	case limit == 0:
		return holdfast.EventsLimitDefault, nil
	}
	return limit, nil
}

// checkEventsPage turns a page of the feed read after cursor after into
// what Events answers: a *holdfast.CursorExpiredError when the page does not start
// right after it (cursors are contiguous per shop, so the events between
// were purged) or, for an empty page, when the shop's last cursor lastSeq
// is past it; else the page cut before its first gap (events purged out of
// cursor order: the next read reports them). Every engine's Events ends
// with it.
func checkEventsPage(after int64, evs []holdfast.Event, lastSeq int64) ([]holdfast.Event, error) {
	if len(evs) == 0 {
		if lastSeq > after {
			return nil, &holdfast.CursorExpiredError{After: after, Oldest: lastSeq}
		}
		return evs, nil
	}
	if evs[0].Cursor != after+1 {
		return nil, &holdfast.CursorExpiredError{After: after, Oldest: evs[0].Cursor - 1}
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Cursor != evs[i-1].Cursor+1 {
			return evs[:i], nil
		}
	}
	return evs, nil
}

// validateSafety checks SetSafetyStock's arguments. Every engine uses it.
func validateSafety(k holdfast.Key, safety int) error {
	if err := holdfast.ValidateKey(k); err != nil {
		return err
	}
	if safety < 0 || safety > holdfast.AvailableMax {
		return holdfast.NewArgumentError("safety", "must be between 0 and %d", holdfast.AvailableMax)
	}
	return nil
}

// validateStockChange checks a stock change's key, delta, reason and id, as
// every engine does before it writes anything.
func validateStockChange(ch holdfast.StockChange) error {
	err := holdfast.ValidateKey(ch.Key)
	switch {
	case err != nil:
		return err
	case ch.Reason == "":
		return holdfast.NewArgumentError("reason", "required")
	case len(ch.Reason) > holdfast.ReasonMaxLen:
		return holdfast.NewArgumentError("reason", "at most %d bytes", holdfast.ReasonMaxLen)
	case len(ch.Reference) > holdfast.ReasonMaxLen:
		return holdfast.NewArgumentError("reference", "at most %d bytes", holdfast.ReasonMaxLen)
	case ch.Set != nil && (*ch.Set < 0 || *ch.Set > holdfast.AvailableMax):
		return holdfast.NewArgumentError("available", "must be between 0 and %d", holdfast.AvailableMax)
	case ch.Set == nil && (ch.Delta < -holdfast.AvailableMax || ch.Delta > holdfast.AvailableMax):
		return holdfast.NewArgumentError("delta", "must be between %d and %d", -holdfast.AvailableMax, holdfast.AvailableMax)
	case ch.ExpectAvailable != nil && (*ch.ExpectAvailable < 0 || *ch.ExpectAvailable > holdfast.AvailableMax):
		return holdfast.NewArgumentError("expected_available", "must be between 0 and %d", holdfast.AvailableMax)
	case len(ch.ID) > holdfast.StockChangeIDMaxLen:
		return holdfast.NewArgumentError("id", "at most %d bytes", holdfast.StockChangeIDMaxLen)
	case !utf8.ValidString(ch.ID) || strings.ContainsFunc(ch.ID, unicode.IsControl):
		return holdfast.NewArgumentError("id", "must be UTF-8 text without control characters")
	}
	return nil
}

// validateWaitCart refuses a wait the waitlist cannot serve correctly: a
// grant is made by the waitlist server, which does not allocate (the queue
// is per key). A wait with a buyer id is served: the wait keeps the
// buyer's hash, the grant holds it to its limits and records it on the
// hold. Every engine's Reserve checks it.
func validateWaitCart(p holdfast.ReserveParams) error {
	if p.Wait == 0 {
		return nil
	}
	if holdfast.HasAllocation(p.Lines) {
		return holdfast.NewArgumentError("wait", "waiting is not offered to a cart with allocated lines (location_id 0)")
	}
	return nil
}

// validateBuyerLimit checks a holdfast.BuyerLimit against its bounds: positive shop
// and item, 0 <= Limit <= holdfast.AvailableMax, 0 <= Window <= retention (claims
// older than the outcome retention are no longer on record, so a longer
// window could not be honoured). Every engine uses it.
func validateBuyerLimit(l holdfast.BuyerLimit, retention time.Duration) error {
	switch {
	case l.ShopID <= 0:
		return holdfast.NewArgumentError("shop_id", "must be a positive integer")
	case l.ItemID <= 0:
		return holdfast.NewArgumentError("item_id", "must be a positive integer")
	case l.Limit < 0 || l.Limit > holdfast.AvailableMax:
		return holdfast.NewArgumentError("limit", "must be between 0 and %d", holdfast.AvailableMax)
	case l.Window < 0 || l.Window > retention:
		return holdfast.NewArgumentError("window", "must be between 0 and the outcome retention (%v)", retention)
	case l.Window%time.Microsecond != 0:
		return holdfast.NewArgumentError("window", "must be a whole number of microseconds")
	}
	return nil
}
