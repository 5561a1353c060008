package holdfast

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
	// set, the new level minus the old), Available the level after it.
	EventStockChanged EventType = "stock.changed"
	// EventKeySoldOut: the key's sellable stock (available - held) reached
	// zero. Available is the key's level when it was noticed.
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
	// EventSequenceBatch bounds the events one sequencer transaction
	// assigns cursors to.
	EventSequenceBatch = 1000
	// EventRetentionDefault is how long sequenced events are kept, as
	// long as outcome records.
	EventRetentionDefault = 24 * time.Hour
	// EventSequencePassMax is the most events one SequenceEvents call
	// sequences (EventSequencePasses batches); the sweeper calls again at
	// once when a call was full.
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
	// At is when the change happened (the database clock, or Config.Now).
	At time.Time `json:"at"`
}

// ValidateEventsArgs checks the arguments of Events for every engine and
// returns the page size to use (limit 0 means EventsLimitDefault).
func ValidateEventsArgs(shopID, after int64, limit int) (int, error) {
	switch {
	case shopID <= 0:
		return 0, NewArgumentError("shop_id", "must be positive")
	case after < 0:
		return 0, NewArgumentError("after", "must not be negative")
	case limit < 0 || limit > EventsLimitMax:
		return 0, NewArgumentError("limit", "must be between 1 and %d (0: %d)", EventsLimitMax, EventsLimitDefault)
	case limit == 0:
		return EventsLimitDefault, nil
	}
	return limit, nil
}

// Events returns up to limit events of shopID's feed with a cursor above
// after, in cursor order (limit 0 means EventsLimitDefault, at most
// EventsLimitMax). An empty answer means nothing new yet: ask again (the
// HTTP feed long-polls). Events first sequences the events that committed
// before the call (waiting for a sequencer at work), so the feed is never
// older than the call. Safe for concurrent use.
func (c *Client) Events(ctx context.Context, shopID int64, after int64, limit int) ([]Event, error) {
	limit, err := ValidateEventsArgs(shopID, after, limit)
	if err != nil {
		return nil, err
	}
	if _, err := c.sequenceEvents(ctx, c.pool); err != nil {
		return nil, err
	}
	var out []Event
	err = c.run(ctx, c.pool, RouteRead, true, true, func(tx pgx.Tx, _ int) error {
		rows, err := tx.Query(ctx, c.q(ctx, RouteRead, "events_read"), shopID, after, limit)
		if err != nil {
			return err
		}
		out = out[:0]
		for rows.Next() {
			e := Event{ShopID: shopID}
			var lines []byte
			var item, loc *int64
			var reason, ref *string
			if err := rows.Scan(&e.Cursor, &e.Type, &e.CheckoutID, &lines, &e.ExpiresAt, &item, &loc,
				&e.Delta, &e.Available, &reason, &ref, &e.At); err != nil {
				return err
			}
			if lines != nil {
				if err := json.Unmarshal(lines, &e.Lines); err != nil {
					return err
				}
			}
			if item != nil {
				e.ItemID = *item
			}
			if loc != nil {
				e.LocationID = *loc
			}
			if reason != nil {
				e.Reason = *reason
			}
			if ref != nil {
				e.Reference = *ref
			}
			if e.ExpiresAt != nil {
				t := e.ExpiresAt.UTC()
				e.ExpiresAt = &t
			}
			e.At = e.At.UTC()
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, err
}

// SequenceEvents assigns per-shop cursors to the events that committed
// since the last pass, in batches of EventSequenceBatch until a batch comes
// back short, and derives key events (sold out, back in stock) for the keys
// they touched. One sequencer runs at a time across every process (a
// transaction-scoped advisory lock; a second waits for the first's batch).
// The sweeper runs it on every tick; Events runs it before reading.
func (c *Client) SequenceEvents(ctx context.Context) (int, error) {
	return c.sequenceEvents(ctx, c.maintenance())
}

// sequencer coalesces a process's sequencing: one caller at a time runs
// it (waiting in memory, holding no connection), and a caller that started
// before a run that has since begun and finished needs no run of its own:
// that run saw every event committed before the caller came.
type sequencer struct {
	mu      sync.Mutex
	lastRun time.Time // when the last completed run began
}

// sequencers holds each Client's sequencer (kept out of Client's struct).
var sequencers sync.Map // *Client -> *sequencer

func (c *Client) sequenceEvents(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	called := time.Now()
	v, _ := sequencers.LoadOrStore(c, &sequencer{})
	sq := v.(*sequencer)
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if sq.lastRun.After(called) {
		return 0, nil
	}
	began := time.Now()
	n, err := c.sequenceEventsLocked(ctx, pool)
	if err == nil {
		sq.lastRun = began
	}
	return n, err
}

func (c *Client) sequenceEventsLocked(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	total := 0
	// A bounded number of batches per call: under a steady stream of
	// writes the next call (or the sweeper's next tick) carries on.
	for pass := 0; pass < EventSequencePasses; pass++ {
		var pending bool
		if err := pool.QueryRow(ctx, c.q(ctx, RouteSweep, "events_pending")).Scan(&pending); err != nil {
			return total, err
		}
		if !pending {
			return total, nil
		}
		n := 0
		err := c.run(ctx, pool, RouteSweep, true, true, func(tx pgx.Tx, _ int) error {
			n = 0
			if _, err := tx.Exec(ctx, c.q(ctx, RouteSweep, "events_lock")); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, c.q(ctx, RouteSweep, "events_sequence"), EventSequenceBatch)
			if err != nil {
				return err
			}
			var shops, items, locs []int64
			for rows.Next() {
				var shop int64
				var typ string
				var lines []byte
				var item, loc *int64
				if err := rows.Scan(&shop, &typ, &lines, &item, &loc); err != nil {
					return err
				}
				n++
				switch {
				case item != nil && loc != nil && typ == string(EventStockChanged):
					shops, items, locs = append(shops, shop), append(items, *item), append(locs, *loc)
				case lines != nil:
					var ls []Line
					if json.Unmarshal(lines, &ls) == nil {
						for _, l := range ls {
							shops, items, locs = append(shops, shop), append(items, l.ItemID), append(locs, l.LocationID)
						}
					}
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if len(shops) == 0 {
				return nil
			}
			_, err = tx.Exec(ctx, c.q(ctx, RouteSweep, "events_keys"), shops, items, locs)
			return err
		})
		total += n
		if err != nil || n < EventSequenceBatch {
			if err == nil && n > 0 {
				// Key events derived by this pass wait for the next
				// batch: sequence them now.
				continue
			}
			return total, err
		}
	}
	return total, nil
}

// EventSequencePasses bounds the batches one SequenceEvents call runs.
const EventSequencePasses = 8

// eventInsertSQL is sql/event_insert.sql, for InsertEventTx (no Client).
var eventInsertSQL = func() string {
	b, err := sqlFiles.ReadFile("sql/event_insert.sql")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// InsertEventTx writes an explicit event of a shop in the caller's
// transaction (an engine feature whose change has no trigger, such as a
// waitlist): it commits or rolls back with the change, and is sequenced
// like every other event. checkout and lines may be nil.
func InsertEventTx(ctx context.Context, tx pgx.Tx, shopID int64, typ EventType, checkout *uuid.UUID, lines []Line, expiresAt *time.Time) error {
	var raw []byte
	if lines != nil {
		b, err := json.Marshal(lines)
		if err != nil {
			return err
		}
		raw = b
	}
	_, err := tx.Exec(ctx, eventInsertSQL, shopID, string(typ), checkout, raw, expiresAt, nil)
	return err
}
