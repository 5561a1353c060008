package holdfast

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Bounds of the listings (Holds, Ledger, Keys).
const (
	// ListLimitDefault is a page's size when the query's Limit is 0.
	ListLimitDefault = 50
	// ListLimitMax bounds a page of holds or ledger entries: a larger
	// Limit is an *ArgumentError.
	ListLimitMax = 500
	// KeysLimitMax bounds Keys: a larger Limit is an *ArgumentError.
	// Defaults to ListLimitDefault when Limit is 0.
	KeysLimitMax = 100
)

// HoldQuery asks for a page of a shop's holds and outcomes (ended holds
// are kept for Config.OutcomeRetention), newest first: by creation time,
// then checkout id, both descending.
type HoldQuery struct {
	ShopID int64
	// ItemID and LocationID keep the holds with a line on that item and/or
	// location; 0 is any.
	ItemID     int64
	LocationID int64
	// Status keeps the holds in that status as Hold reports it (a hold
	// past its expiry that is not swept yet is expired); "" is any.
	Status Status
	// After is the Next of the previous page; "" is the first page.
	After string
	// Limit is the page size: 0 is ListLimitDefault, at most ListLimitMax.
	Limit int
}

// HoldPage is one page of holds. Next, when not empty, is the After of the
// next page. Paging is keyset pagination on (created_at, checkout_id),
// which never changes for a hold: under concurrent writes no hold is
// listed twice and none that existed before the first page is skipped
// (holds created meanwhile may or may not be listed; a Status filter lists
// a hold as it is when its page is read).
type HoldPage struct {
	Holds []Hold `json:"holds"`
	Next  string `json:"next,omitempty"`
}

// LedgerQuery asks for a page of a key's ledger (inventory_ledger: every
// change of its available stock), newest first.
type LedgerQuery struct {
	Key
	// After is the Next of the previous page; "" is the first page.
	After string
	// Limit is the page size: 0 is ListLimitDefault, at most ListLimitMax.
	Limit int
}

// LedgerEntry is one change of a key's available stock: a claim (reason
// "claim", reference the checkout id) or a stock change.
type LedgerEntry struct {
	// ID orders the entries of a database; it is unique.
	ID             int64     `json:"id"`
	Delta          int       `json:"delta"`
	AvailableAfter int       `json:"available_after"`
	Reason         string    `json:"reason"`
	Reference      string    `json:"reference,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// LedgerPage is one page of a key's ledger. Next, when not empty, is the
// After of the next page. Paging is keyset pagination on the entry's ID:
// entries are append-only, so no entry is listed twice and none that
// existed before the first page is skipped.
type LedgerPage struct {
	Key
	Entries []LedgerEntry `json:"entries"`
	Next    string        `json:"next,omitempty"`
}

// KeyQuery asks for a shop's keys by activity (Keys).
type KeyQuery struct {
	ShopID int64
	// Limit is how many keys: 0 is ListLimitDefault, at most KeysLimitMax.
	Limit int
}

// HoldCursor is the decoded position of a HoldQuery.After, with the
// listing it belongs to: a query of another shop or with other filters
// refuses it (*CursorError) rather than start at a position of a listing
// it is not.
type HoldCursor struct {
	CreatedAt  time.Time
	CheckoutID uuid.UUID
	// ShopID, ItemID, LocationID and Status are the query that issued the
	// cursor (its shop and filters).
	ShopID, ItemID, LocationID int64
	Status                     Status
}

// LedgerCursor is the decoded position of a LedgerQuery.After: the ID of
// the last entry listed, and the key whose ledger it is (entry IDs are
// unique across keys, so another key's cursor would position silently).
type LedgerCursor struct {
	ID int64
	Key
}

// Cursors are opaque to callers: a prefix naming the listing, then
// base64url of the position and of the listing that issued it. The prefix
// makes a ledger cursor sent to the hold listing a clear invalid_cursor; a
// cursor of the earlier, shorter form (position only) is malformed.
const (
	holdCursorPrefix   = "h1."
	ledgerCursorPrefix = "l1."
	holdCursorLen      = 8 + 16 + 3*8 + 1
	ledgerCursorLen    = 8 + 3*8
)

// cursorStatuses numbers a HoldQuery's Status filter in a cursor.
var cursorStatuses = []Status{"", StatusHeld, StatusClaimed, StatusReleased, StatusExpired}

// Encode returns the cursor as the opaque After string.
func (c HoldCursor) Encode() string {
	var b [holdCursorLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c.CreatedAt.UnixMicro()))
	copy(b[8:24], c.CheckoutID[:])
	binary.BigEndian.PutUint64(b[24:32], uint64(c.ShopID))
	binary.BigEndian.PutUint64(b[32:40], uint64(c.ItemID))
	binary.BigEndian.PutUint64(b[40:48], uint64(c.LocationID))
	b[48] = byte(max(0, slices.Index(cursorStatuses, c.Status)))
	return holdCursorPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// Encode returns the cursor as the opaque After string.
func (c LedgerCursor) Encode() string {
	var b [ledgerCursorLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c.ID))
	binary.BigEndian.PutUint64(b[8:16], uint64(c.ShopID))
	binary.BigEndian.PutUint64(b[16:24], uint64(c.ItemID))
	binary.BigEndian.PutUint64(b[24:32], uint64(c.LocationID))
	return ledgerCursorPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

func decodeCursor(s, prefix string, n int) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		// Another listing's cursor is a cursor, of the wrong listing:
		// invalid_cursor, as another shop's or key's is.
		for other, what := range map[string]string{holdCursorPrefix: "a shop's holds", ledgerCursorPrefix: "a key's ledger"} {
			if other != prefix && strings.HasPrefix(s, other) {
				return nil, &CursorError{Reason: "the cursor is of " + what + ", not of this listing: list again from the first page"}
			}
		}
		return nil, NewArgumentError("cursor", "not a cursor of this listing (use the next of the previous page)")
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) != n {
		return nil, NewArgumentError("cursor", "malformed cursor (use the next of the previous page)")
	}
	return b, nil
}

// CompanionLinesFilter is LinesFilter for the pre-orders of the query's
// location: the same filter at the negated location, where a hold keeps
// its pre-ordered units of a key (PreorderKey). A hold matching either
// filter is listed. Nil when the query has no location (a filter on the
// item alone matches companion lines already).
func (q HoldQuery) CompanionLinesFilter() []byte {
	if q.LocationID == 0 {
		return nil
	}
	c := q
	c.LocationID = -q.LocationID
	return c.LinesFilter()
}

// Validate checks q and returns it with its defaults filled in, and its
// cursor (nil on the first page). A rejected query is an *ArgumentError
// naming the field (shop_id, item_id, location_id, status, limit, cursor).
// Every engine calls it before reading anything.
func (q HoldQuery) Validate() (HoldQuery, *HoldCursor, error) {
	if q.ShopID <= 0 {
		return q, nil, NewArgumentError("shop_id", "must be a positive integer")
	}
	if q.ItemID < 0 {
		return q, nil, NewArgumentError("item_id", "must be a positive integer, or 0 for any")
	}
	if q.LocationID < 0 {
		return q, nil, NewArgumentError("location_id", "must be a positive integer, or 0 for any")
	}
	switch q.Status {
	case "", StatusHeld, StatusClaimed, StatusReleased, StatusExpired:
	default:
		return q, nil, NewArgumentError("status", "must be held, claimed, released or expired, not %q", string(q.Status))
	}
	var err error
	if q.Limit, err = checkLimit(q.Limit, ListLimitMax); err != nil {
		return q, nil, err
	}
	if q.After == "" {
		return q, nil, nil
	}
	b, err := decodeCursor(q.After, holdCursorPrefix, holdCursorLen)
	if err != nil {
		return q, nil, err
	}
	if int(b[48]) >= len(cursorStatuses) {
		return q, nil, NewArgumentError("cursor", "malformed cursor (use the next of the previous page)")
	}
	c := &HoldCursor{
		CreatedAt:  time.UnixMicro(int64(binary.BigEndian.Uint64(b[:8]))).UTC(),
		ShopID:     int64(binary.BigEndian.Uint64(b[24:32])),
		ItemID:     int64(binary.BigEndian.Uint64(b[32:40])),
		LocationID: int64(binary.BigEndian.Uint64(b[40:48])),
		Status:     cursorStatuses[b[48]],
	}
	copy(c.CheckoutID[:], b[8:24])
	switch {
	case c.ShopID != q.ShopID:
		return q, nil, &CursorError{Reason: fmt.Sprintf("the cursor is of shop %d's holds, not shop %d's: list again from the first page", c.ShopID, q.ShopID)}
	case c.ItemID != q.ItemID || c.LocationID != q.LocationID || c.Status != q.Status:
		return q, nil, &CursorError{Reason: fmt.Sprintf("the cursor is of a listing with other filters (item %d, location %d, status %q; 0 and \"\" are any): list again from the first page", c.ItemID, c.LocationID, string(c.Status))}
	}
	return q, c, nil
}

// LinesFilter is the JSON array a hold's lines must contain for the
// query's item and location filter (both engines test containment), or nil
// when the query filters on neither.
func (q HoldQuery) LinesFilter() []byte {
	if q.ItemID == 0 && q.LocationID == 0 {
		return nil
	}
	m := map[string]int64{}
	if q.ItemID != 0 {
		m["item_id"] = q.ItemID
	}
	if q.LocationID != 0 {
		m["location_id"] = q.LocationID
	}
	b, _ := json.Marshal([]map[string]int64{m})
	return b
}

// Validate checks q and returns it with its defaults filled in, and its
// cursor (nil on the first page). A rejected query is an *ArgumentError
// naming the field (shop_id, item_id, location_id, limit, cursor).
func (q LedgerQuery) Validate() (LedgerQuery, *LedgerCursor, error) {
	if err := ValidateKey(q.Key); err != nil {
		return q, nil, err
	}
	var err error
	if q.Limit, err = checkLimit(q.Limit, ListLimitMax); err != nil {
		return q, nil, err
	}
	if q.After == "" {
		return q, nil, nil
	}
	b, err := decodeCursor(q.After, ledgerCursorPrefix, ledgerCursorLen)
	if err != nil {
		return q, nil, err
	}
	c := &LedgerCursor{ID: int64(binary.BigEndian.Uint64(b[:8])), Key: Key{
		ShopID:     int64(binary.BigEndian.Uint64(b[8:16])),
		ItemID:     int64(binary.BigEndian.Uint64(b[16:24])),
		LocationID: int64(binary.BigEndian.Uint64(b[24:32])),
	}}
	if c.ID <= 0 {
		return q, nil, NewArgumentError("cursor", "malformed cursor (use the next of the previous page)")
	}
	if c.Key != q.Key {
		return q, nil, &CursorError{Reason: fmt.Sprintf("the cursor is of the ledger of shop %d item %d location %d, not of this key: list again from the first page", c.ShopID, c.ItemID, c.LocationID)}
	}
	return q, c, nil
}

// Validate checks q and returns it with its default filled in.
func (q KeyQuery) Validate() (KeyQuery, error) {
	if q.ShopID <= 0 {
		return q, NewArgumentError("shop_id", "must be a positive integer")
	}
	var err error
	q.Limit, err = checkLimit(q.Limit, KeysLimitMax)
	return q, err
}

func checkLimit(n, most int) (int, error) {
	switch {
	case n == 0:
		return min(ListLimitDefault, most), nil
	case n < 0 || n > most:
		return n, NewArgumentError("limit", "must be between 1 and %d", most)
	}
	return n, nil
}
