package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/engine/driver"
	"github.com/jackc/pgx/v5"
)

// CombineBatchMax bounds the reservations one combined transaction serves
// (engine.CombineBatchMax).
const CombineBatchMax = engine.CombineBatchMax

// CombineRunnersMax bounds the combined transactions in flight at once from
// one client (engine.CombineRunnersMax).
const CombineRunnersMax = engine.CombineRunnersMax

// checkoutKey identifies a checkout: ids are scoped per shop.
type checkoutKey struct {
	shop     int64
	checkout uuid.UUID
}

// combinedAttempt is one combined transaction for reqs
// (driver.Reserver.CombinedAttempt); the engine schedules the batches
// (engine/combine.go).
func (c *Client) combinedAttempt(ctx context.Context, reqs []*reservation, stripe int) ([]*holdfast.Hold, []bool, error) {
	n := len(reqs)
	ids, qtys, ttls := make([]uuid.UUID, 0, n), make([]int32, 0, n), make([]int64, 0, n)
	shops, items, locs := make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	for _, r := range reqs {
		l := r.Lines[0]
		ids = append(ids, r.Checkout)
		qtys = append(qtys, int32(l.Quantity))
		ttls = append(ttls, r.TTL.Microseconds())
		shops, items, locs = append(shops, r.Shop), append(items, l.ItemID), append(locs, l.LocationID)
	}
	created, other, err := c.batchOnce(ctx, reqs, stripe, ids, qtys, ttls, shops, items, locs)
	if err != nil {
		return nil, nil, err
	}
	out, elsewhere := make([]*holdfast.Hold, n), make([]bool, n)
	for i, r := range reqs {
		out[i] = created[checkoutKey{r.Shop, r.Checkout}]
		elsewhere[i] = out[i] == nil && other[i]
	}
	return out, elsewhere, nil
}

// batchOnce runs one combined transaction in two round trips: BEGIN, its
// bounds and the counter locks (batch_lock.sql) in one pipeline; then the
// holds (batch_reserve.sql) and COMMIT in another, so the counter rows are
// held for one round trip and the commit. other[i] reports a request not
// granted for want of units on stripe's row while its key's other rows
// had them, as batch_lock.sql read them.
func (c *Client) batchOnce(ctx context.Context, uniq []*reservation, stripe int, ids []uuid.UUID, qtys []int32, ttls, shops, items, locs []int64) (created map[checkoutKey]*holdfast.Hold, other []bool, err error) {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Release destroys the connection unless it is idle and healthy, so a
	// failure anywhere below never leaks an open transaction.
	defer conn.Release()

	// Each key once, with its depth as this client last saw it: a
	// shallow key's batch holds every row of it (batch_lock.sql) — unless
	// another batch of the key from this client is running, one the
	// engine let overlap while the key was deep: then only its stripe's
	// row, not to wait for the other batch's.
	var kShops, kItems, kLocs, sShops, sItems, sLocs []int64
	var kEvery []bool
	seen := make(map[holdfast.Key]bool, 1)
	for i := range uniq {
		k := holdfast.Key{ShopID: shops[i], ItemID: items[i], LocationID: locs[i]}
		if seen[k] {
			continue
		}
		seen[k] = true
		alone := c.depth.Enter(k) // every key entered: the defer below leaves each
		every := alone && !c.depth.Deep(k)
		kShops, kItems, kLocs, kEvery = append(kShops, k.ShopID), append(kItems, k.ItemID), append(kLocs, k.LocationID), append(kEvery, every)
		if every {
			sShops, sItems, sLocs = append(sShops, k.ShopID), append(sItems, k.ItemID), append(sLocs, k.LocationID)
		}
	}
	defer func() {
		for k := range seen {
			c.depth.Leave(k)
		}
	}()
	b := &pgx.Batch{}
	b.Queue(c.comment(ctx, holdfast.RouteReserve) + "BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(c.q(ctx, holdfast.RouteReserve, "set_local"), c.combineLockWait, c.setLocal[1], c.setLocal[2])
	b.Queue(c.q(ctx, holdfast.RouteReserve, "batch_lock"), kShops, kItems, kLocs, stripe, kEvery)
	br := conn.SendBatch(ctx, b)
	units, others := map[holdfast.Key]int{}, map[holdfast.Key]int{}
	err = func() error {
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var k holdfast.Key
			var u, o int
			if err := rows.Scan(&k.ShopID, &k.ItemID, &k.LocationID, &u, &o); err != nil {
				return err
			}
			units[k] += u // a shallow key's rows add up
			others[k] = o
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, nil, err
	}
	for k := range seen {
		c.depth.Note(k, units[k]+others[k])
	}

	// Grant each key's requests in arrival order while they fit; the
	// others' units are counted down likewise (the requests this batch
	// does not grant, in order, as a batch on another stripe would).
	other = make([]bool, len(uniq))
	var gIDs []string // as text: pgx's exec mode (PgBouncer) cannot encode []uuid.UUID
	var gQtys []int32
	var gTTLs, gShops, gItems, gLocs []int64
	for i := range uniq {
		k := holdfast.Key{ShopID: shops[i], ItemID: items[i], LocationID: locs[i]}
		if q := int(qtys[i]); q <= units[k] {
			units[k] -= q
			gIDs, gQtys, gTTLs = append(gIDs, ids[i].String()), append(gQtys, qtys[i]), append(gTTLs, ttls[i])
			gShops, gItems, gLocs = append(gShops, shops[i]), append(gItems, items[i]), append(gLocs, locs[i])
		} else if q <= others[k] {
			others[k] -= q
			other[i] = true
		}
	}
	created = make(map[checkoutKey]*holdfast.Hold, len(gIDs))
	if len(gIDs) == 0 {
		_, err := conn.Exec(ctx, "ROLLBACK")
		return created, other, err
	}

	b = &pgx.Batch{}
	b.Queue(c.q(ctx, holdfast.RouteReserve, "batch_reserve"),
		gIDs, gQtys, gTTLs, gShops, gItems, gLocs, c.cfg.HoldLifetimeMax.Microseconds(), c.now(), stripe,
		sShops, sItems, sLocs)
	b.Queue("COMMIT")
	// From here the COMMIT is on its way with the holds: any failure to
	// read their answers may follow a commit (a connection lost with the
	// answers in flight), so it is a commitError, and commitUnacknowledged
	// tells a lost answer (doubt) from a statement error (which aborts the
	// pipeline before its COMMIT: nothing committed).
	br = conn.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, nil, &driver.CommitError{Err: err}
	}
	for rows.Next() {
		h := &holdfast.Hold{Status: holdfast.StatusHeld, Claimable: true, Revision: 1}
		if err := rows.Scan(&h.ShopID, &h.CheckoutID, &h.CreatedAt, &h.ExpiresAt, &h.Deadline); err != nil {
			rows.Close()
			return nil, nil, &driver.CommitError{Err: err}
		}
		created[checkoutKey{h.ShopID, h.CheckoutID}] = h
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, &driver.CommitError{Err: err}
	}
	tag, err := br.Exec()
	err = commitChecked(conn.Conn().PgConn(), err) // follow.go: a cancelled synchronous-replication wait
	if err != nil {
		return nil, nil, &driver.CommitError{Err: err}
	}
	if tag.String() == "ROLLBACK" {
		return nil, nil, pgx.ErrTxCommitRollback
	}
	return created, other, br.Close()
}

// batchKey reports whether k is a batch key as this client last saw its
// strategy, or by the client's default for a key it has not seen. A stale
// or missing cache entry is safe: a key that is not (or no longer) a batch
// key has no units in its counter row, the batch sends it to the plain
// path, and that path caches its strategy.
func (c *Client) batchKey(k holdfast.Key) bool {
	if ki, ok := c.keys.Load(k); ok {
		return strategyOf(ki.(keyInfo).strategy).combines
	}
	return strategyOf(c.cfg.Strategy).combines
}

// StripeDepth is the units a batch key's counter rows hold together, at
// least, for its batches to take from one row each, two of them at once
// (a deep key). Below it one batch of the key runs at a time and holds
// every row of it (a shallow key), so that near a sell-out no batch finds
// its row empty while the other row has units: measured on the flash-sale
// demo (500 units), two rows taken one per batch cost 0.78× the
// reservations/s of one row (docs/PERFORMANCE.md).
const StripeDepth = 2 * CombineBatchMax
