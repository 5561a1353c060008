package holdfast

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// EventType names what an event reports.
type EventType string

// The event types. Hold and stock events are written by the database in
// the transaction of the change they report (triggers on holds and
// inventory_ledger), so an acknowledged change always has its event and a
// rolled-back one never does. Key events are derived by the sequencer from
// the key's level when it sequences events that touched the key: they are
// not transactional, and a key that sells out and comes back between two
// sequencer passes may report neither.
const (
	EventHoldCreated  EventType = "hold.created"
	EventHoldEdited   EventType = "hold.edited"
	EventHoldExtended EventType = "hold.extended"
	EventHoldClaimed  EventType = "hold.claimed"
	EventHoldReleased EventType = "hold.released"
	EventHoldExpired  EventType = "hold.expired"
	// EventStockChanged is a stock set or adjustment (not a claim's
	// deduction, which is EventHoldClaimed): Delta is the change (for a
	// set, the new level minus the old), Available the level after it. A
	// safety stock change that changes it is one too (Reason "safety",
	// Delta 0, Available unchanged; no ledger entry), so that the key's
	// sold-out state follows it.
	EventStockChanged EventType = "stock.changed"
	// EventKeySoldOut: the key's sellable stock (Level.Sellable: available
	// - safety - held, and nothing while the key has waiters) reached zero.
	// Available is the key's level when it was noticed.
	EventKeySoldOut EventType = "key.sold_out"
	// EventKeyBackInStock: a sold-out key has sellable stock again.
	EventKeyBackInStock EventType = "key.back_in_stock"
)

// Bounds of the event feed.
const (
	// EventsLimitDefault is the page size of Events when limit is 0.
	EventsLimitDefault = 100
	// EventsLimitMax is the largest page Events returns.
	EventsLimitMax = 1000
	// EventSequenceBatch bounds the event rows one sequencer transaction
	// assigns cursors to (on PostgreSQL a row of the holds one statement
	// created covers one cursor per hold, up to CombineBatchMax).
	EventSequenceBatch = 1000
	// EventRetentionDefault is how long sequenced events are kept, as
	// long as outcome records.
	EventRetentionDefault = 24 * time.Hour
	// EventRetentionMaxDefault is how long at most an event is kept for a
	// webhook endpoint that has not received it (Config.EventRetentionMax).
	EventRetentionMaxDefault = 7 * 24 * time.Hour
	// EventSequencePassMax is the most events one SequenceEvents call
	// sequences (EventSequencePasses batches); the maintenance worker that
	// sequences calls again at once when a call was full.
	EventSequencePassMax = EventSequencePasses * EventSequenceBatch
)

// Event is one state change in a shop's event feed. Cursor is the shop's
// monotonically increasing position of the event: a consumer that stored
// the last cursor it handled asks for the events after it and neither
// misses nor repeats one, across restarts of either side. Events of one
// checkout are in the order their changes committed.
//
// Hold events carry CheckoutID, Lines (the hold's lines after the change)
// and ExpiresAt; stock and key events carry ItemID and LocationID, and
// Delta, Available, Reason and Reference as their type says.
type Event struct {
	Cursor     int64      `json:"cursor"`
	ShopID     int64      `json:"shop_id"`
	Type       EventType  `json:"type"`
	CheckoutID *uuid.UUID `json:"checkout_id,omitempty"`
	Lines      []Line     `json:"lines,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	ItemID     int64      `json:"item_id,omitempty"`
	LocationID int64      `json:"location_id,omitempty"`
	Delta      *int       `json:"delta,omitempty"`
	Available  *int       `json:"available,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Reference  string     `json:"reference,omitempty"`
	// MergedInto, on the hold.released event of a checkout a merge ended,
	// is the checkout its lines moved into (its units stayed held).
	MergedInto *uuid.UUID `json:"merged_into,omitempty"`
	// Preorder, on a stock or key event, says it is about the key's
	// pre-order headroom (its cap ledger), not its stock (preorder.go).
	Preorder bool `json:"preorder,omitempty"`
	// At is when the change happened (the database clock, or Config.Now).
	At time.Time `json:"at"`
}

// MarshalJSON writes e as the API and webhooks send it: its members in
// declaration order, its times in UTC with exactly six fractional digits
// (microseconds, the databases' precision; trailing zeros kept), as every
// time on the wire is written (package wire).
func (e Event) MarshalJSON() ([]byte, error) {
	const layout = "2006-01-02T15:04:05.000000Z07:00"
	var exp *string
	if e.ExpiresAt != nil {
		s := e.ExpiresAt.UTC().Format(layout)
		exp = &s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the caller's encoder escapes, if it does
	err := enc.Encode(struct {
		Cursor     int64      `json:"cursor"`
		ShopID     int64      `json:"shop_id"`
		Type       EventType  `json:"type"`
		CheckoutID *uuid.UUID `json:"checkout_id,omitempty"`
		Lines      []Line     `json:"lines,omitempty"`
		ExpiresAt  *string    `json:"expires_at,omitempty"`
		ItemID     int64      `json:"item_id,omitempty"`
		LocationID int64      `json:"location_id,omitempty"`
		Delta      *int       `json:"delta,omitempty"`
		Available  *int       `json:"available,omitempty"`
		Reason     string     `json:"reason,omitempty"`
		Reference  string     `json:"reference,omitempty"`
		MergedInto *uuid.UUID `json:"merged_into,omitempty"`
		Preorder   bool       `json:"preorder,omitempty"`
		At         string     `json:"at"`
	}{e.Cursor, e.ShopID, e.Type, e.CheckoutID, e.Lines, exp, e.ItemID, e.LocationID, e.Delta, e.Available, e.Reason, e.Reference, e.MergedInto, e.Preorder, e.At.UTC().Format(layout)})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// ErrCursorExpired: Events was asked for the events after a cursor whose
// next events have been purged from the feed (older than
// Config.EventRetention): reading on would skip them silently. The error
// is a *CursorExpiredError, which says where the feed now starts.
var ErrCursorExpired = errors.New("holdfast: event cursor expired (its next events were purged)")

// CursorExpiredError is the answer of Events (HTTP 410 cursor_expired) to
// an after cursor whose next events were purged. Oldest is the oldest
// cursor still available: Events with after = Oldest returns every event
// still in the feed; the events after After up to Oldest are gone (a
// consumer that needs them rebuilds its state from the current levels).
// It matches ErrCursorExpired.
type CursorExpiredError struct {
	After  int64 // the cursor asked for
	Oldest int64 // the oldest cursor still available (≥ After)
}

func (e *CursorExpiredError) Error() string {
	return fmt.Sprintf("holdfast: event cursor %d expired: events %d..%d were purged; the oldest cursor still available is %d", e.After, e.After+1, e.Oldest, e.Oldest)
}

func (e *CursorExpiredError) Is(target error) bool { return target == ErrCursorExpired }

// EventSequencePasses bounds the batches one SequenceEvents call runs.
const EventSequencePasses = 8
