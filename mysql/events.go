package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// readEvents reads a page of shop's events and its last cursor
// (driver.Eventer.ReadEvents).
func (c *Client) readEvents(ctx context.Context, tx *sql.Tx, shopID, after int64, limit int) ([]holdfast.Event, int64, error) {
	// The shop's last cursor first: an event at or before it that the read
	// below does not see was purged.
	var last int64
	if err := tx.QueryRowContext(ctx, c.q(ctx, holdfast.RouteRead, "events_last"), shopID).Scan(&last); err != nil {
		return nil, 0, err
	}
	rows, err := tx.QueryContext(ctx, c.q(ctx, holdfast.RouteRead, "events_read"), shopID, after, limit, shopID)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []holdfast.Event
	for rows.Next() {
		e := holdfast.Event{ShopID: shopID}
		var checkout, cart []byte
		var expires sql.NullTime
		var item, loc, delta, avail sql.NullInt64
		var reason, ref sql.NullString
		if err := rows.Scan(&e.Cursor, &e.Type, &checkout, &cart, &expires, &item, &loc, &delta, &avail, &reason, &ref, &e.At); err != nil {
			return nil, 0, err
		}
		if len(checkout) == 16 {
			id, _ := uuid.FromBytes(checkout)
			e.CheckoutID = &id
		}
		if cart != nil {
			if err := json.Unmarshal(cart, &e.Lines); err != nil {
				return nil, 0, err
			}
			e.MergedInto = engine.MergedInto(cart) // merge.go
		}
		if expires.Valid {
			t := expires.Time.UTC()
			e.ExpiresAt = &t
		}
		e.ItemID, e.LocationID = item.Int64, loc.Int64
		if delta.Valid {
			d := int(delta.Int64)
			e.Delta = &d
		}
		if avail.Valid {
			a := int(avail.Int64)
			e.Available = &a
		}
		e.Reason, e.Reference = reason.String, ref.String
		e.At = e.At.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	// events_read.sql answers in no order (a sort there spilled the
	// expanded rows to disk): at most limit events, sorted here.
	slices.SortFunc(out, func(a, b holdfast.Event) int { return cmp.Compare(a.Cursor, b.Cursor) })
	return out, last, nil
}

// eventSequencePasses bounds the batches one SequenceEvents call runs
// (holdfast.EventSequencePassMax events).
const eventSequencePasses = holdfast.EventSequencePassMax / holdfast.EventSequenceBatch

// sequencePasses runs the sequencing passes (driver.Eventer.SequencePasses);
// one pool serves both the request path and maintenance here.
func (c *Client) sequencePasses(ctx context.Context, _ bool) (int, error) {
	return c.sequenceEvents(ctx)
}

func (c *Client) sequenceEvents(ctx context.Context) (int, error) {
	const route = holdfast.RouteSweep
	total := 0
	for pass := 0; pass < eventSequencePasses; pass++ {
		var pending bool
		if err := c.db.QueryRowContext(ctx, c.q(ctx, route, "events_pending")).Scan(&pending); err != nil {
			return total, err
		}
		if !pending {
			return total, nil
		}
		n, locked := 0, true
		err := c.run(ctx, nil, route, true, func(tx *sql.Tx, _ int) error {
			n = 0
			var err error
			if locked, err = c.exists(ctx, tx, route, "events_lock"); err != nil || !locked {
				return err
			}
			n, err = c.sequenceBatch(ctx, tx)
			return err
		})
		total += n
		if err != nil || !locked || n == 0 {
			return total, err
		}
	}
	return total, nil
}

// sequenceBatch sequences one batch under the sequencer's lock row and
// answers how many events (cursors) it numbered. A row takes n cursors
// (migration 23: a combined batch's hold.created events of a shop are one
// row), its seq the first of them.
func (c *Client) sequenceBatch(ctx context.Context, tx *sql.Tx) (int, error) {
	const route = holdfast.RouteSweep
	type pending struct {
		id, shop  int64
		typ       string
		cart      []byte
		item, loc sql.NullInt64
		n         int64
		grouped   []byte
	}
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "events_batch"), holdfast.EventSequenceBatch)
	if err != nil {
		return 0, err
	}
	var batch []pending
	var shops []int64
	seen := map[int64]bool{}
	for rows.Next() {
		var p pending
		if err := rows.Scan(&p.id, &p.shop, &p.typ, &p.cart, &p.item, &p.loc, &p.n, &p.grouped); err != nil {
			rows.Close()
			return 0, err
		}
		batch = append(batch, p)
		if !seen[p.shop] {
			seen[p.shop] = true
			shops = append(shops, p.shop)
		}
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(batch) == 0 {
		return 0, nil
	}
	raw, _ := json.Marshal(shops)
	last := map[int64]int64{}
	rows, err = tx.QueryContext(ctx, c.q(ctx, route, "events_shops"), string(raw))
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var shop, seq int64
		if err := rows.Scan(&shop, &seq); err != nil {
			rows.Close()
			return 0, err
		}
		last[shop] = seq
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	assign := make([][3]int64, 0, len(batch))
	var keys [][3]int64
	addKeys := func(shop int64, cart []byte) {
		var ls []holdfast.Line
		if json.Unmarshal(cart, &ls) == nil {
			for _, l := range ls {
				keys = append(keys, [3]int64{shop, l.ItemID, l.LocationID})
			}
		}
	}
	events := 0
	for _, p := range batch {
		n := max(p.n, 1)
		assign = append(assign, [3]int64{p.shop, p.id, last[p.shop] + 1})
		last[p.shop] += n
		events += int(n)
		switch {
		case p.typ == string(holdfast.EventStockChanged) && p.item.Valid && p.loc.Valid:
			keys = append(keys, [3]int64{p.shop, p.item.Int64, p.loc.Int64})
		case p.grouped != nil:
			var elems []groupedEvent
			if json.Unmarshal(p.grouped, &elems) == nil {
				for _, e := range elems {
					addKeys(p.shop, e.Cart)
				}
			}
		case p.cart != nil:
			addKeys(p.shop, p.cart)
		}
	}
	lasts := make([][2]int64, 0, len(shops))
	for _, s := range shops {
		lasts = append(lasts, [2]int64{s, last[s]})
	}
	raw, _ = json.Marshal(assign)
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "events_assign"), string(raw)); err != nil {
		return 0, err
	}
	raw, _ = json.Marshal(lasts)
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "events_shops_set"), string(raw)); err != nil {
		return 0, err
	}
	if len(keys) > 0 {
		if err := c.deriveKeyEvents(ctx, tx, keys); err != nil {
			return 0, err
		}
	}
	return events, nil
}

// groupedEvent is one element of a grouped event row's holds (migration
// 23): [checkout id hex, cart, expires_at]; the sequencer reads the cart.
type groupedEvent struct {
	Cart json.RawMessage
}

func (g *groupedEvent) UnmarshalJSON(b []byte) error {
	var elem []json.RawMessage
	if err := json.Unmarshal(b, &elem); err != nil {
		return err
	}
	if len(elem) > 1 {
		g.Cart = elem[1]
	}
	return nil
}

// deriveKeyEvents writes key.sold_out / key.back_in_stock for the keys
// whose sold-out state differs from what was last reported (a key seen for
// the first time reports only a sold-out state). They are sequenced by the
// next batch.
func (c *Client) deriveKeyEvents(ctx context.Context, tx *sql.Tx, keys [][3]int64) error {
	const route = holdfast.RouteSweep
	dedup := map[[3]int64]bool{}
	var uniq [][3]int64
	for _, k := range keys {
		if !dedup[k] {
			dedup[k] = true
			uniq = append(uniq, k)
		}
	}
	raw, _ := json.Marshal(uniq)
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "events_key_state"), string(raw))
	if err != nil {
		return err
	}
	type change struct {
		k       [3]int64
		avail   int64
		soldOut bool
		report  bool
	}
	var changes []change
	for rows.Next() {
		var ch change
		var was sql.NullBool
		if err := rows.Scan(&ch.k[0], &ch.k[1], &ch.k[2], &ch.avail, &ch.soldOut, &was); err != nil {
			rows.Close()
			return err
		}
		if was.Valid && was.Bool == ch.soldOut {
			continue
		}
		ch.report = was.Valid || ch.soldOut
		changes = append(changes, ch)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, ch := range changes {
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "events_key_set"), ch.k[0], ch.k[1], ch.k[2], ch.soldOut); err != nil {
			return err
		}
		if !ch.report {
			continue
		}
		typ := holdfast.EventKeyBackInStock
		if ch.soldOut {
			typ = holdfast.EventKeySoldOut
		}
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "event_key_insert"), ch.k[0], string(typ), ch.k[1], ch.k[2], ch.avail, c.now()); err != nil {
			return err
		}
	}
	return nil
}

// PurgeEventsOnce deletes one batch (at most Config.SweepBatch) of
// sequenced events older than Config.EventRetention that every webhook
// endpoint of their shop has received, or older than
// Config.EventRetentionMax, and returns how many. PurgeOnce runs it too.
func (c *Client) PurgeEventsOnce(ctx context.Context) (int, error) {
	return (*engineDriver)(c).PurgeEvents(ctx, c.cfg.SweepBatch)
}

// PurgeEvents deletes at most limit events as PurgeEventsOnce does, in a
// statement of its own; the engine's PurgeOnce runs it
// (driver.EventPurger).
func (d *engineDriver) PurgeEvents(ctx context.Context, limit int) (int, error) {
	c := d.c()
	res, err := c.db.ExecContext(ctx, c.q(ctx, holdfast.RoutePurge, "purge_events"),
		c.now(), c.cfg.EventRetention.Microseconds(), c.now(), c.cfg.EventRetentionMax.Microseconds(), limit)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// InsertEventTx writes an explicit event of a shop in the caller's
// transaction (an engine feature whose change has no trigger, such as a
// waitlist): it commits or rolls back with the change and is sequenced
// like every other event. checkout, lines and expiresAt may be nil.
func (c *Client) InsertEventTx(ctx context.Context, tx *sql.Tx, shopID int64, typ holdfast.EventType, checkout *uuid.UUID, lines []holdfast.Line, expiresAt *time.Time) error {
	var id, cart any
	if checkout != nil {
		id = checkout[:]
	}
	if lines != nil {
		b, err := json.Marshal(lines)
		if err != nil {
			return err
		}
		cart = string(b)
	}
	var exp any
	if expiresAt != nil {
		exp = expiresAt.UTC()
	}
	_, err := tx.ExecContext(ctx, c.q(ctx, holdfast.RouteSweep, "event_insert"), shopID, string(typ), id, cart, exp, c.now())
	return err
}
