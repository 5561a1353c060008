package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"time"
)

// readEvents reads a page of shop's events and its last cursor
// (driver.Eventer.ReadEvents).
func (c *Client) readEvents(ctx context.Context, tx pgx.Tx, shopID, after int64, limit int) (out []holdfast.Event, last int64, err error) {
	if err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteRead, "events_last"), shopID).Scan(&last); err != nil {
		return nil, 0, err
	}
	rows, err := tx.Query(ctx, c.q(ctx, holdfast.RouteRead, "events_read"), shopID, after, limit)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		e := holdfast.Event{ShopID: shopID}
		var lines []byte
		var item, loc *int64
		var reason, ref *string
		if err := rows.Scan(&e.Cursor, &e.Type, &e.CheckoutID, &lines, &e.ExpiresAt, &item, &loc,
			&e.Delta, &e.Available, &reason, &ref, &e.At); err != nil {
			return nil, 0, err
		}
		if lines != nil {
			if err := json.Unmarshal(lines, &e.Lines); err != nil {
				return nil, 0, err
			}
			e.MergedInto = engine.MergedInto(lines) // merge.go
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
	return out, last, rows.Err()
}

// sequencePasses runs the sequencing passes on the request path's pool
// (reading) or the maintenance's (driver.Eventer.SequencePasses).
func (c *Client) sequencePasses(ctx context.Context, reading bool) (int, error) {
	if reading {
		return c.sequenceEventsLocked(ctx, c.pool)
	}
	return c.sequenceEventsLocked(ctx, c.maintenance())
}

func (c *Client) sequenceEventsLocked(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	total := 0
	// A bounded number of batches per call: under a steady stream of
	// writes the next call (or the sweeper's next tick) carries on.
	for pass := 0; pass < holdfast.EventSequencePasses; pass++ {
		var pending bool
		if err := pool.QueryRow(ctx, c.q(ctx, holdfast.RouteSweep, "events_pending")).Scan(&pending); err != nil {
			return total, err
		}
		if !pending {
			return total, nil
		}
		n, events := 0, 0
		err := c.run(ctx, pool, holdfast.RouteSweep, true, true, func(tx pgx.Tx, _ int) error {
			n, events = 0, 0
			if _, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteSweep, "events_lock")); err != nil {
				return err
			}
			// One row: the event rows sequenced, the events they are (a
			// statement's holds are one row, migration 28) and the
			// distinct keys they touched (events_sequence.sql derives
			// them).
			var counted int
			var shops, items, locs []int64
			if err := tx.QueryRow(ctx, c.q(ctx, holdfast.RouteSweep, "events_sequence"), holdfast.EventSequenceBatch).
				Scan(&n, &counted, &events, &shops, &items, &locs); err != nil {
				return err
			}
			if n != counted {
				// A batch row moved under the pass: its cursors would
				// have a gap. Nothing of it commits; the next pass
				// sequences the batch again.
				err := fmt.Errorf("holdfast: event sequencer: %d of a batch of %d event rows sequenced", n, counted)
				n, events = 0, 0
				return err
			}
			if len(shops) == 0 {
				return nil
			}
			_, err := tx.Exec(ctx, c.q(ctx, holdfast.RouteSweep, "events_keys"), shops, items, locs)
			return err
		})
		total += events
		if err != nil || n < holdfast.EventSequenceBatch {
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
func InsertEventTx(ctx context.Context, tx pgx.Tx, shopID int64, typ holdfast.EventType, checkout *uuid.UUID, lines []holdfast.Line, expiresAt *time.Time) error {
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
